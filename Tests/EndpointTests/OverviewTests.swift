import Foundation
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// The advertiser's overview, filled by the demo's traffic through real HTTP: each channel's
/// numbers are those of the view it comes from, for the advertiser's sites alone.
@Suite struct OverviewTests {
    @Test func eachChannelIsTheViewItComesFromForTheAdvertisersSites() throws {
        let endpoint = try LiveEndpoint(sites: Demo.sites) { $0.manualClock = true }
        defer { endpoint.stop() }
        try Demo.drive(port: endpoint.port, token: "test-token")
        endpoint.server.waitUntilSummaryIsReady()
        let acme = try AccessTests.token(endpoint, advertiser: "acme"), news = try AccessTests.token(endpoint, advertiser: "news")
        func get(_ path: String, _ token: String) -> [String: Any] { json(endpoint.request("GET", path, headers: AccessTests.bearer(token))) }
        let period = "from=2026-11-01&to=2026-11-22"

        let overview = get("/api/overview?\(period)", acme)
        #expect((overview["advertiser"] as? [String: Any])?["id"] as? String == "acme")
        #expect((overview["days"] as? [String])?.count == 22)
        let channels = Dictionary(uniqueKeysWithValues: (overview["channels"] as? [[String: Any]] ?? []).map { ($0["id"] as! String, $0) })
        #expect(Set(channels.keys) == ["web", "app_installs", "re_engagements", "apple_ads"])
        for (id, channel) in channels {
            let perDay = channel["per_day"] as? [Int] ?? []
            #expect(perDay.count == 22 && channel["total"] as? Int == perDay.reduce(0, +), "\(id)")
            #expect((channel["top"] as? [[String: Any]])?.count ?? 0 <= 5)
        }
        // The demo's traffic fills the brand's web and app channels (Apple's answers need the
        // demo's stand-in for Apple's API, which the browser test runs).
        #expect(["web", "app_installs"].allSatisfy { (channels[$0]?["total"] as? Int ?? 0) > 0 }, "\(channels)")

        let web = get("/api/summary?\(period)", acme)
        #expect(channels["web"]?["total"] as? Int == (web["accepted"] as? [String: Int])?["destination"])
        #expect(channels["web"]?["per_day"] as? [Int] == (web["per_day"] as? [[String: Any]])?.map { $0["destination"] as! Int })
        let apps = get("/api/apps/summary?\(period)", acme)
        let conversions = apps["conversions"] as? [[String: Any]] ?? []
        #expect(channels["app_installs"]?["total"] as? Int == conversions.reduce(0) { $0 + ($1["installs"] as! Int) + ($1["redownloads"] as! Int) })
        #expect(channels["re_engagements"]?["total"] as? Int == conversions.reduce(0) { $0 + ($1["re_engagements"] as! Int) })
        let appleAds = get("/api/apple-ads/summary?\(period)", acme)
        #expect(channels["apple_ads"]?["total"] as? Int == (appleAds["by_status"] as? [String: Int])?["attributed"])
        let top = (channels["web"]?["top"] as? [[String: Any]] ?? []).compactMap { $0["count"] as? Int }
        #expect(top == top.sorted(by: >) && !top.isEmpty)
        #expect((overview["side_by_side"] as? String)?.contains("never added") == true)

        // The publisher's overview counts the copies it holds: the source copies.
        let publisher = get("/api/overview?\(period)", news)
        let publisherWeb = (publisher["channels"] as? [[String: Any]])?.first { $0["id"] as? String == "web" }
        #expect(publisherWeb?["total"] as? Int == (get("/api/summary?\(period)", news)["accepted"] as? [String: Int])?["source"])
        #expect((publisher["channels"] as? [[String: Any]])?.first { $0["id"] as? String == "app_installs" }?["total"] as? Int == 0)

        // One advertiser's token names another: refused; the admin names any, or sees every site.
        let other = endpoint.request("GET", "/api/overview?advertiser=acme", headers: AccessTests.bearer(news))
        #expect(other.status == 403 && json(other)["field"] as? String == "advertiser")
        #expect(try endpoint.get("/api/overview?advertiser=acme&\(period)").bodyText == endpoint.request("GET", "/api/overview?\(period)", headers: AccessTests.bearer(acme)).bodyText)
        let everything = json(try endpoint.get("/api/overview?\(period)"))
        #expect(everything["advertiser"] is NSNull)
        let missing = try endpoint.get("/api/overview?advertiser=nobody")
        #expect(missing.status == 404 && json(missing)["rule"] as? String == "unknown_advertiser")
        // A node that exports to no ClickHouse knows only its own numbers.
        let cluster = try endpoint.get("/api/overview?scope=cluster")
        #expect(cluster.status == 409 && json(cluster)["rule"] as? String == "cluster_scope_unavailable")
        #expect(everything["scope"] as? String == "node" && everything["cluster_available"] as? Bool == false)
        for bad in ["?site=shop.example", "?from=2026-13-01", "?from=2026-11-02&to=2026-11-01", "?scope=both"] {
            #expect(try endpoint.get("/api/overview" + bad).status == 400, "\(bad)")
        }
    }
}
