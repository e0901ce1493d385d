import Primitives
import Testing
@testable import Endpoint

@Suite struct RememberedSiteChecksTests {
    /// The memo answers exactly what the rules answer, for sites seen once, seen again at once, seen
    /// again after more sites than it keeps close at hand, and for names the rules refuse.
    @Test func answersWhatTheRulesAnswer() {
        let rules = SiteRules()
        let remembered = RememberedSiteChecks(rules)
        let sites = ["news.example", "shop.example", "co.uk", "localhost", "bbc.co.uk", "127.0.0.1", "Shop.Example",
                     "a.b.news.example", "example", "xn--bcher-kva.example", ""]
        #expect(sites.contains { rules.check($0) != nil } && sites.contains { rules.check($0) == nil })
        var order = sites + sites.reversed() + sites
        order += sites.flatMap { [$0, $0, "news.example"] }
        for site in order {
            #expect(remembered.check(site) == rules.check(site), "\(site)")
        }
    }

    /// A flood of distinct names is answered right after the memo forgets everything.
    @Test func answersStayRightPastTheCapacity() {
        let rules = SiteRules()
        let remembered = RememberedSiteChecks(rules)
        for i in 0..<(RememberedSiteChecks.capacity + 10) {
            let site = i % 3 == 0 ? "site\(i).co.uk" : i % 3 == 1 ? "co.uk" : "site\(i).example"
            #expect(remembered.check(site) == rules.check(site))
        }
    }
}
