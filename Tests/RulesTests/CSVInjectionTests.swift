import Testing
@testable import Primitives

/// OWASP's CSV Injection guidance, cell by cell: what a spreadsheet could evaluate gets a leading
/// `'` and is quoted; what it reads as a value is left as it is. scripts/csv_injection_test.py opens
/// the endpoint's CSVs in LibreOffice and finds no formula in them.
@Suite struct CSVInjectionTests {
    static let hostile = [
        "=1+1", "+1+1", "-1+1", "@SUM(A1:A2)", "|calc", "=cmd|' /C calc'!A0", "=HYPERLINK(\"http://x\",\"y\")",
        // After white space a spreadsheet still sees the formula.
        " =1+1", "  +1", "\t=1+1", "\r=1+1", "\n=1+1", "\u{00A0}=1+1", "\u{3000}@x", "\u{2003}-1+1", "\u{FEFF}=1", "\u{200B}=1",
        // Full-width forms some spreadsheets fold into the ASCII ones.
        "\u{FF1D}1+1", "\u{FF0B}1", "\u{FF0D}1+1", "\u{FF20}x", "\u{FF5C}calc",
        // Characters that begin a cell's evaluation by themselves.
        "\tplain", "\rplain", "\0plain",
        // Repeats and extremes.
        "==1", "=" + String(repeating: "+", count: 10_000), String(repeating: " ", count: 1000) + "=1",
        // A formula character joined to a combining or zero-width mark is one Character, not `=`.
        "=\u{0301}1+1", "=\u{200D}HYPERLINK(\"x\")", "\u{200D}=1", "\u{2060}+1", "\u{00AD}@x",
    ]

    @Test(arguments: hostile)
    func aFormulaIsNeverPassedAsItIs(_ cell: String) {
        // Compared as bytes: a zero-width joiner after the guard's `'` joins it into one Character.
        let field = Array(CSV.field(cell).utf8)
        #expect(field.starts(with: Array("\"'".utf8)) && field.last == UInt8(ascii: "\""), "\(cell.debugDescription)")
        // The text is kept whole: the quote and the guard's `'` come off again.
        let inner = String(decoding: field.dropFirst(2).dropLast(), as: UTF8.self).replacingOccurrences(of: "\"\"", with: "\"")
        #expect(Array(inner.utf8) == Array(cell.utf8))
    }

    @Test(arguments: ["", "plain", "-12", "-0.5", "12", "a=b", "a+b", "news.example", "Winter sale", "e-mail", "x@y.example", "'=1"])
    func aValueIsLeftAsItIs(_ cell: String) {
        #expect(!CSV.isFormulaLike(cell))
        #expect(CSV.field(cell) == cell)
    }

    @Test func aRowKeepsItsFieldsApart() {
        #expect(CSV.row(["=1,2", "a\"b", " -3"]) == "\"'=1,2\",\"a\"\"b\",\"' -3\"\r\n")
    }
}
