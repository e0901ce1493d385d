import Primitives
import Testing

/// A country as a breakdown keys it: the two letters, or why there are none.
@Suite struct CountryCodeTests {
    @Test func aCodeIsTwoLettersAndAnythingElseIsSaidForWhatItIs() {
        #expect(CountryCode.key("US") == "US")
        #expect(CountryCode.key("us") == "US" && CountryCode.key("gB") == "GB")
        #expect(CountryCode.key(nil) == CountryCode.notSent)
        // What an unsigned field can hold instead: each is one key, never a key of its own.
        for odd in ["", "U", "USA", "U1", "1U", "ÉU", "U\u{0}", "🇺🇸", " US", "US ", "u\u{301}s", "\u{FF35}\u{FF33}", String(repeating: "A", count: 10_000)] {
            #expect(CountryCode.key(odd) == CountryCode.unreadable, "\(odd.debugDescription.prefix(20))")
        }
        // Every key a stranger can make is one of 26 × 26 codes or two words.
        var keys = Set<String>()
        for a in UInt8(0)...UInt8(255) { for b in [UInt8(0x41), 0x61, 0x7A, 0x5B, 0x60, 0xC3] { keys.insert(CountryCode.key(String(decoding: [a, b], as: UTF8.self))) } }
        #expect(keys.allSatisfy { $0.count == 2 || $0 == CountryCode.unreadable })
    }
}
