import Foundation
import Primitives
import Testing
@testable import Endpoint

/// `NameDisclosure`, on every read path, in both directions: a campaign's name is shown to the
/// owners of its source site and of its destination, a conversion's to the owner of its site, and
/// a campaign that names another destination never to the advertiser whose site got the report.
@Suite struct NameDisclosureTests {
    /// news.example (advertiser news) runs three campaigns: two for shop.example (acme), one for
    /// elsewhere.example; the shop registers two conversions. Two conversions' copies reach both
    /// sites; a click on the third campaign converts at the shop all the same.
    static func endpoint() throws -> LiveEndpoint {
        // elsewhere.example is served too, for a third advertiser.
        let endpoint = try AccessTests.endpoint { $0.sites.append("elsewhere.example") }
        for (path, body) in [
            ("/api/conversions", #"{"site":"shop.example","name":"Purchase","trigger_data":3}"#),
            ("/api/conversions", #"{"site":"shop.example","name":"Newsletter","trigger_data":5}"#),
            ("/api/campaigns", #"{"source_site":"news.example","source_id":40,"destination":"shop.example","name":"Winter sale","starts_at":"2026-11-01T00:00:00Z"}"#),
            ("/api/campaigns", #"{"source_site":"news.example","source_id":41,"destination":"shop.example","name":"Gift guide","starts_at":"2026-11-01T00:00:00Z"}"#),
            ("/api/campaigns", #"{"source_site":"news.example","source_id":43,"destination":"elsewhere.example","name":"Someone else's","starts_at":"2026-11-01T00:00:00Z"}"#),
        ] {
            let response = endpoint.request("POST", path, headers: AccessTests.admin, body: Array(body.utf8))
            precondition(response.status == 201, response.bodyText)
        }
        let clock = { (time: String) in
            precondition(endpoint.request("POST", "/admin/clock", headers: AccessTests.admin, body: Array(#"{"now":"\#(time)"}"#.utf8)).status == 200)
        }
        clock("2026-11-20T10:00:00Z")
        for triggerData in [3, 5, 3] {
            _ = endpoint.request("GET", "/.well-known/private-click-measurement/trigger-attribution/0\(triggerData)", host: "shop.example")
        }
        clock("2026-11-21T22:00:00Z")
        for (sourceID, triggerData) in [(40, 3), (41, 5), (43, 3)] {
            let body = reportBody(sourceID: sourceID, triggerData: triggerData)
            let (shop, news) = (try endpoint.post(body, host: "shop.example"), try endpoint.post(body, host: "news.example"))
            precondition(shop.status == 201 && news.status == 201)
        }
        return endpoint
    }

    static let shops = ["Winter sale", "Gift guide"]
    static let elsewhere = "Someone else's"
    static let conversions = ["Purchase", "Newsletter"]

    /// Every text a reader with `headers` gets from the read paths that show names, with the query.
    static func everything(_ endpoint: LiveEndpoint, _ headers: [(String, String)], _ query: String = "") -> [String: String] {
        var texts: [String: String] = [:]
        for path in ["/api/summary", "/api/summary.csv", "/api/summary/crosstab.csv", "/api/overview", "/api/reports", "/api/reports.csv",
                     "/api/campaigns", "/api/conversions"] {
            let separator = query.isEmpty ? "" : "?"
            let response = endpoint.request("GET", path + separator + query, headers: headers)
            #expect(response.status == 200, "\(path): \(response.bodyText)")
            texts[path] = response.bodyText
        }
        return texts
    }

    @Test func theAdvertiserSeesTheCampaignsThatBroughtItsConversionsOnEveryPath() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let acme = try AccessTests.token(endpoint, advertiser: "acme")
        for (who, texts) in [("acme's token", Self.everything(endpoint, AccessTests.bearer(acme))),
                             ("the admin's ?advertiser=acme", Self.everything(endpoint, AccessTests.admin, "advertiser=acme"))] {
            for (path, text) in texts {
                // The campaigns bought for the shop are named wherever campaigns are named.
                if path != "/api/conversions" {
                    for name in Self.shops { #expect(text.contains(name), "\(who), \(path) lacks \(name): \(text.prefix(400))") }
                }
                #expect(!text.contains(Self.elsewhere), "\(who), \(path) shows another destination's campaign")
                #expect(!text.contains("No campaign registered") && !text.contains("No matching campaign"))
            }
            let summary = (try? JSONSerialization.jsonObject(with: Data(texts["/api/summary"]!.utf8))) as? [String: Any] ?? [:]
            let named = Set((summary["by_campaign"] as? [[String: Any]] ?? []).compactMap { $0["campaign"] as? String })
            #expect(named == Set(Self.shops), "\(who): \(texts["/api/summary"]!)")
            let crosstab = summary["crosstab"] as? [String: Any]
            #expect(Set((crosstab?["rows"] as? [[String: Any]] ?? []).compactMap { $0["campaign"] as? String }) == Set(Self.shops))
            #expect(Set((crosstab?["conversions"] as? [[String: Any]] ?? []).compactMap { $0["conversion"] as? String }) == Set(Self.conversions))
            // The report of the third campaign's click is counted, under its source id alone.
            #expect((summary["by_campaign"] as? [[String: Any]] ?? []).contains { $0["source_id"] as? Int == 43 && $0["campaign"] is NSNull })
        }
    }

    @Test func thePublisherSeesItsCampaignsAndNoneOfTheShopsConversions() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let news = try AccessTests.token(endpoint, advertiser: "news")
        for (who, texts) in [("news's token", Self.everything(endpoint, AccessTests.bearer(news))),
                             ("the admin's ?advertiser=news", Self.everything(endpoint, AccessTests.admin, "advertiser=news"))] {
            for (path, text) in texts {
                for name in Self.conversions { #expect(!text.contains(name), "\(who), \(path) shows the shop's conversion \(name)") }
            }
            let campaigns = texts["/api/campaigns"]!
            for name in Self.shops + [Self.elsewhere] { #expect(campaigns.contains(name), "\(who)") }
            #expect(texts["/api/conversions"]?.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        }
    }

    @Test func aThirdAdvertiserSeesOnlyTheCampaignBoughtForItsSite() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let body = #"{"id":"other","name":"Other Co","sites":["elsewhere.example"]}"#
        #expect(endpoint.request("POST", "/api/advertisers", headers: AccessTests.admin, body: Array(body.utf8)).status == 201)
        let other = try AccessTests.token(endpoint, advertiser: "other")
        let texts = Self.everything(endpoint, AccessTests.bearer(other))
        for (path, text) in texts {
            for name in Self.shops + Self.conversions { #expect(!text.contains(name), "\(path)") }
        }
        // Its campaign, bought from news.example, is its to see; the report its click brought to
        // the shop is not (it was sent to the shop, not here).
        #expect(texts["/api/campaigns"]!.contains(Self.elsewhere))
        #expect(!texts["/api/reports"]!.contains(Self.elsewhere))
    }

    @Test func theAdminSeesEveryName() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let texts = Self.everything(endpoint, AccessTests.admin)
        for name in Self.shops + [Self.elsewhere] { #expect(texts["/api/campaigns"]!.contains(name)) }
        for name in Self.conversions { #expect(texts["/api/conversions"]!.contains(name)) }
        for name in Self.shops { #expect(texts["/api/reports"]!.contains(name)) }
    }
}
