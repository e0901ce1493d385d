import Foundation
import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

@Suite struct PublicSuffixListTests {
    /// The list's own conformance tests (test_psl.txt, CC0), in the registrable-domain sense:
    /// `checkPublicSuffix(input, expected)` where expected is the registrable domain or null.
    @Test func passesThePublicSuffixListConformanceTests() throws {
        let url = try #require(Bundle.module.url(forResource: "test_psl", withExtension: "txt"))
        let text = try String(contentsOf: url, encoding: .utf8)
        let psl = PublicSuffixList.shipped
        let pattern = try NSRegularExpression(pattern: #"checkPublicSuffix\((null|'[^']*'), (null|'[^']*')\);"#)
        var checked = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("//") {
            let s = String(line)
            guard let match = pattern.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) else { continue }
            let input = String(s[Range(match.range(at: 1), in: s)!]).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            let expectedText = String(s[Range(match.range(at: 2), in: s)!])
            let expected = expectedText == "null" ? nil : Punycode.toASCII(domain: expectedText.trimmingCharacters(in: CharacterSet(charactersIn: "'")))
            checked += 1
            // Null input and names with a leading dot have no registrable domain.
            if input == "null" || input.hasPrefix(".") {
                #expect(expected == nil)
                continue
            }
            let host = try #require(Punycode.toASCII(domain: input.lowercased()))
            let got = psl.registrableDomain(of: host).map(String.init)
            #expect(got == expected, "\(input)")
        }
        #expect(checked >= 70)
    }

    @Test func registrableDomainsOfCommonNames() {
        let psl = PublicSuffixList.shipped
        #expect(psl.registrableDomain(of: "shop.example.co.uk") == "example.co.uk")
        #expect(psl.registrableDomain(of: "co.uk") == nil)
        #expect(psl.registrableDomain(of: "news.example") == "news.example")
        #expect(psl.registrableDomain(of: "user.github.io") == "user.github.io", "private section counts")
        #expect(psl.registrableDomain(of: "github.io") == nil)
    }

    @Test func punycodeMatchesRFC3492() {
        #expect(Punycode.encode("bücher") == "bcher-kva")
        #expect(Punycode.encode("münchen") == "mnchen-3ya")
        #expect(Punycode.toASCII(domain: "食狮.公司.cn") == "xn--85x722f.xn--55qx5d.cn")
        // RFC 3492 §7.1 (A) Arabic (Egyptian).
        #expect(Punycode.encode("\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}\u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}") == "egbpdaj6bu4bxfgehfvwxn")
        #expect(Punycode.toASCII(label: "plain") == "plain")
    }
}
