/// RFC 4180 CSV, as every export and the summary write it.
public enum CSV {
    /// One field: quoted when it holds a comma, a quote or a line break (quotes doubled), and
    /// guarded against formula injection as OWASP's CSV Injection guidance asks: a field a
    /// spreadsheet could take for a formula gets a leading `'` and is quoted, so that opening an
    /// export cannot run what a sender put in it.
    public static func field(_ text: String) -> String {
        var text = text
        var quote = false
        if isFormulaLike(text) {
            text = "'" + text
            quote = true
        }
        guard quote || text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A row of fields, with the line ending RFC 4180 asks for.
    public static func row(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    /// Code points that make a spreadsheet read a cell as a formula (or a DDE call) when they
    /// come first: OWASP's `=`, `+`, `-`, `@`, and `|`; and their full-width forms, which some
    /// spreadsheets fold into them.
    static let formulaStarts: Set<Unicode.Scalar> = ["=", "+", "-", "@", "|", "\u{FF1D}", "\u{FF0B}", "\u{FF0D}", "\u{FF20}", "\u{FF5C}"]

    /// Whether a spreadsheet might evaluate `text`: it begins with a tab, a carriage return, a line
    /// feed or NUL (OWASP, ASVS 1.2.10), or with one of `formulaStarts` once leading white space
    /// and invisible format characters (any Unicode space, a BOM, zero-width ones) are passed over.
    /// Code points, not characters: `=` followed by a combining mark is one character that is not
    /// `=`, and still a formula to a spreadsheet. A plain number (`-12`, `-0.5`) is a value, not a
    /// formula, and is left as it is.
    public static func isFormulaLike(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first else { return false }
        if first == "\t" || first == "\r" || first == "\n" || first == "\0" { return true }
        guard let start = text.unicodeScalars.first(where: { !$0.properties.isWhitespace && $0.properties.generalCategory != .format }),
              formulaStarts.contains(start) else { return false }
        return !isPlainNumber(text)
    }

    private static func isPlainNumber(_ text: String) -> Bool {
        var digits = 0, dots = 0
        for (i, c) in text.utf8.enumerated() {
            switch c {
            case UInt8(ascii: "-") where i == 0: continue
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: "."): dots += 1
            default: return false
            }
        }
        return digits > 0 && dots <= 1 && text.utf8.last != UInt8(ascii: ".")
    }
}
