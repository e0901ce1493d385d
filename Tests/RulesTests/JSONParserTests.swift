import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

private func parse(_ text: String) throws(JSONParser.Failure) -> JSONValue {
    try JSONParser().parse(Array(text.utf8))
}

private func failure(_ bytes: [UInt8], maxDepth: Int = 32) -> JSONParser.Failure.Kind? {
    do {
        _ = try JSONParser(maxDepth: maxDepth).parse(bytes)
        return nil
    } catch {
        return error.kind
    }
}

private func failure(_ text: String) -> JSONParser.Failure.Kind? { failure(Array(text.utf8)) }

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" { "a" : [1, -2.5e3, true, false, null, "x\n\u00e9\ud83d\ude00"], "b": {} } "#)
        #expect(value == .object([
            JSONMember(key: "a", value: .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null,
                                                .string("x\né😀")])),
            JSONMember(key: "b", value: .object([])),
        ]))
    }

    @Test func keepsNumberLiteralsAndClassifiesIntegers() throws {
        #expect(JSONValue.isIntegerLiteral("0"))
        #expect(JSONValue.isIntegerLiteral("-17"))
        #expect(!JSONValue.isIntegerLiteral("3.0"))
        #expect(!JSONValue.isIntegerLiteral("1e2"))
        #expect(!JSONValue.isIntegerLiteral("-"))
        let huge = String(repeating: "9", count: 10_000)
        #expect(try parse(huge) == .number(huge))
    }

    /// `integerValue` says what the literal check and `Int(_:)` together say, on every edge: the
    /// sign, leading zeros, the ends of `Int`, one past them, and what is not an integer at all.
    @Test func integerValueAgreesWithTheLiteralCheckAndInt() {
        var texts = ["0", "-0", "7", "-7", "00", "01", "-01", "10", "63", "64", "-", "", "+1", "1.0", "1e2", " 1", "1 ",
                     "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                     "99999999999999999999", "12a", "a12", "٣"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { texts.append(String(Int.random(in: .min ... .max, using: &generator) >> Int.random(in: 0...63))) }
        for text in texts {
            let expected = JSONValue.isIntegerLiteral(text) ? Int(text) : nil
            #expect(JSONValue.integerValue(text) == expected, "\(text)")
        }
    }

    @Test func refusesDuplicateKeys() {
        #expect(failure(#"{"a":1,"a":2}"#) == .duplicateKey("a"))
        // Past the linear-scan size too.
        let many = (0..<40).map { "\"k\($0)\":0" }.joined(separator: ",")
        #expect(failure("{\(many),\"k3\":1}") == .duplicateKey("k3"))
        #expect(failure("{\(many)}") == nil)
        // Escapes are decoded before comparing.
        #expect(failure(#"{"a":1,"\u0061":2}"#) == .duplicateKey("a"))
    }

    @Test func boundsNesting() {
        #expect(failure(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)) == .tooDeep(limit: 32))
        #expect(failure(String(repeating: "[", count: 32) + String(repeating: "]", count: 32)) == nil)
        #expect(failure(String(repeating: "{\"a\":", count: 33) + "1" + String(repeating: "}", count: 33)) == .tooDeep(limit: 32))
    }

    @Test func refusesInvalidUTF8() {
        #expect(failure([0x22, 0xFF, 0x22]) == .invalidUTF8)
        #expect(failure([0x22, 0xC0, 0xAF, 0x22]) == .invalidUTF8, "overlong encoding")
        #expect(failure([0x22, 0xED, 0xA0, 0x80, 0x22]) == .invalidUTF8, "encoded surrogate")
        #expect(failure([0x22, 0xE2, 0x82, 0x22]) == .invalidUTF8, "truncated sequence")
        #expect(failure([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]) == .invalidUTF8, "past U+10FFFF")
        #expect(failure([0x22, 0xE2, 0x82, 0xAC, 0x22]) == nil, "the euro sign is fine")
    }

    @Test func refusesWhatRFC8259Forbids() {
        for bad in ["", "{", "}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "-", "1e", "tru", "nul", "'a'",
                    "{a:1}", "\"\u{01}\"", "\"\\x\"", #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, "[1] [2]",
                    "NaN", "Infinity", "\"unterminated", "{\"a\" 1}", "[1 2]"] {
            #expect(failure(bad) != nil, "\(bad) must not parse")
        }
    }

    @Test func serializesBackToEquivalentJSON() throws {
        let text = #"{"a":[1,"q\"\\\u0001",{"b":null}],"c":-0.5}"#
        let value = try parse(text)
        #expect(try parse(value.serialized()) == value)
        #expect(value.serialized() == text, "compact input comes back byte for byte")
    }
}
