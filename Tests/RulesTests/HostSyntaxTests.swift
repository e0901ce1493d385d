import Testing
import Primitives

/// What a Host header may be: a name or an IP literal, with an optional numeric port.
@Suite struct HostSyntaxTests {
    @Test(arguments: [("shop.example", "shop.example"), ("Shop.Example:443", "shop.example"), ("shop.example.", "shop.example"),
                      ("www.shop.example:8443", "www.shop.example"), ("127.0.0.1:8080", "127.0.0.1"), ("localhost", "localhost"),
                      ("[::1]", "::1"), ("[2001:DB8::1]:443", "2001:db8::1"), ("xn--bcher-kva.example", "xn--bcher-kva.example"),
                      ("a.b-c.d", "a.b-c.d"), (String(repeating: "a", count: 63) + ".example", String(repeating: "a", count: 63) + ".example")])
    func hostsAreNamedWithoutPortOrTrailingDot(value: String, name: String) {
        #expect(HostSyntax.name(of: value) == name)
    }

    @Test(arguments: ["", ":443", "shop.example:@evil.example", "news.example:abc", "news.example:", "news.example:0",
                      "news.example:65536", "news.example:000443x", "a..b", ".example", "-a.example", "a-.example", "a b.example",
                      "a/b", "a@b", "évil.example", "[::1", "[::1]x", "[::1]:", "[zz::1]", "[1]", "under_score.example", "a:1:2",
                      String(repeating: "a", count: 64) + ".example", String(repeating: "a.", count: 127) + "ab", "shop.example..",
                      "shop.example\r\nX-Evil: 1", "%73hop.example"])
    func anythingElseIsNoHost(value: String) {
        #expect(HostSyntax.name(of: value) == nil, "\(value)")
    }
}
