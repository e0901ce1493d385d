import Testing
@testable import HTTPServer

@Suite struct ByteAppendingTests {
    /// Content-Length, ids and access-log numbers are written with `append(decimal:)`: it must say
    /// what `String(_:)` says, at every width and at both ends of `Int`.
    @Test(arguments: [0, 7, 9, 10, 99, 100, 4_096, 1_000_000, 12_345_678_901, Int.max, -1, -10, -987, Int.min])
    func decimalIsWhatStringSays(_ value: Int) {
        var bytes: [UInt8] = Array("x=".utf8)
        bytes.append(decimal: value)
        #expect(String(decoding: bytes, as: UTF8.self) == "x=\(value)")
    }

    @Test func jsonStringsEscapeOnlyWhatJSONNeeds() {
        var bytes: [UInt8] = []
        appendJSONString("a\"b\\c\u{1}d é/", to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #""a\"b\\c\u0001d é/""#)
    }
}
