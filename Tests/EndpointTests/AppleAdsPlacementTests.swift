import AppleAds
import AppleAdsStandIn
import Foundation
import Primitives
import Testing
@testable import Endpoint

/// Apple's answer since 2025–2026 through the live endpoint: placements and claims on the Apple
/// Ads view, pre-orders counted as such, and Apple's Developer Mode answer kept as a test, out of
/// every count, readable by the app that asked.
@Suite(.serialized) struct AppleAdsPlacementTests {
    let live = AppleAdsTests()

    static func answer(_ changes: [String: String]) -> String {
        var text = AppleAdsTests.attributed
        for (from, to) in changes { text = text.replacingOccurrences(of: from, with: to) }
        return text
    }

    @Test func theViewBreaksInstallsDownByPlacementAndClaimAndLeavesTheTestAnswerOut() throws {
        let search = Self.answer(["\"claimType\":\"Click\"": "\"claimType\":\"Click\",\"supplyPlacement\":\"APPSTORE_SEARCH_RESULTS\""])
        let view = Self.answer(["\"claimType\":\"Click\"": "\"claimType\":\"Impression\",\"supplyPlacement\":\"APPSTORE_TODAY_TAB\"",
                                "\"clickDate\":\"2026-11-20T09:12Z\"": "\"impressionDate\":\"2026-11-20T09:12Z\""])
        let preorder = Self.answer(["\"Download\"": "\"preorder\"", "\"claimType\":\"Click\"": "\"claimType\":\"Click\",\"supplyPlacement\":\"MAPS_SEARCH_RESULTS\""])
        // Apple's Developer Mode answer, as its AAAttribution page prints it (docs/APPLE.md).
        let test = #"{"attribution":true,"orgId":1234567890,"campaignId":1234567890,"conversionType":"Download","clickDate":"2020-04-08T17:17Z","claimType":"Click","adGroupId":1234567890,"countryOrRegion":"US","keywordId":123222,"adId":542317136,"supplyPlacement":"APPSTORE_SEARCH_RESULTS"}"#
        let almost = test.replacingOccurrences(of: "\"adGroupId\":1234567890", with: "\"adGroupId\":1234567891")
        let standIn = try AppleAdsStandIn(scripts: ["s1": [.answer(200, search)], "s2": [.answer(200, search)], "v1": [.answer(200, view)],
                                                    "p1": [.answer(200, preorder)], "t1": [.answer(200, test)], "t2": [.answer(200, test)],
                                                    "a1": [.answer(200, almost)], "n1": [.answer(200, #"{"attribution":false}"#)]])
        defer { standIn.stop() }
        let endpoint = try live.endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        var ids: [String: String] = [:]
        for token in ["s1", "s2", "v1", "p1", "t1", "t2", "a1", "n1"] {
            let response = try live.post(endpoint, token)
            #expect(response.status == 202)
            ids[token] = json(response)["id"] as? String
        }
        live.at(endpoint, start, plus: 0)

        // The setup view of an app of that site says Apple's test answer came.
        #expect(endpoint.request("POST", "/api/apps", headers: [("Authorization", "Bearer test-token")], body: Array(AppsTests.app.utf8)).status == 201)
        let setup = try #require((json(try endpoint.get("/api/apps/setup"))["apps"] as? [[String: Any]])?.first)
        #expect((setup["apple_ads_test_answer"] as? [String: Any])?["last_at"] as? String == "2026-11-20T10:00:00.000Z", "\(setup)")
        #expect(!(setup["next_steps"] as? [String] ?? []).contains { $0.contains("For Apple Ads") })

        // The app that asked reads that its answer is Apple's test, with Apple's record.
        let asked = live.status(endpoint, try #require(ids["t1"]))
        #expect(asked["status"] as? String == "test", "\(asked)")
        #expect(live.status(endpoint, try #require(ids["a1"]))["status"] as? String == "attributed")

        let summary = json(try endpoint.get("/api/apple-ads/summary?from=2026-11-20&to=2026-11-20"))
        #expect(summary["tokens"] as? Int == 6 && summary["test_payloads"] as? Int == 2, "\(summary)")
        let byStatus = try #require(summary["by_status"] as? [String: Int])
        #expect(byStatus["attributed"] == 5 && byStatus["not_attributed"] == 1 && byStatus["test"] == nil)
        let installs = try #require(summary["installs"] as? [[String: Any]])
        #expect(!installs.contains { $0["ad_group_id"] as? Int == 1_234_567_890 }, "the test answer is no campaign")
        let total = installs.reduce(0) { $0 + ($1["downloads"] as! Int) + ($1["redownloads"] as! Int) + ($1["pre_orders"] as! Int) + ($1["other"] as! Int) }
        #expect(total == 5)
        #expect(installs.reduce(0) { $0 + ($1["pre_orders"] as! Int) } == 1)
        var placements: [String: Int] = [:]
        for row in try #require(summary["placements"] as? [[String: Any]]) {
            placements["\(row["placement"]!)/\(row["claim"]!)"] = row["installs"] as? Int
        }
        // a1, the test answer with one id changed, is a real search-results tap.
        #expect(placements == ["search_results/click": 3, "today_tab/view": 1, "other/click": 1], "\(placements)")

        // The overview's Apple Ads line counts the five attributed installs, not the tests.
        let overview = json(try endpoint.get("/api/overview?from=2026-11-20&to=2026-11-20"))
        let channel = try #require((overview["channels"] as? [[String: Any]])?.first { $0["id"] as? String == "apple_ads" })
        #expect(channel["total"] as? Int == 5, "\(channel)")

        // Every field is in the export, the test answer under its own status.
        let lines = try endpoint.get("/api/apple-ads").bodyText.split(separator: "\n").map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.filter { $0["status"] as? String == "test" }.count == 2)
        let viewed = try #require(lines.first { $0["claimType"] as? String == "Impression" })
        #expect(viewed["impressionDate"] as? String == "2026-11-20T09:12Z" && viewed["supplyPlacement"] as? String == "APPSTORE_TODAY_TAB")
        #expect(lines.contains { $0["conversionType"] as? String == "preorder" && $0["supplyPlacement"] as? String == "MAPS_SEARCH_RESULTS" })
    }

    /// Attributed installs by `countryOrRegion`: the code as Apple sends it (upper-cased), "not
    /// sent" when the answer has none, never a guess, and nothing a stranger's text makes a key of.
    @Test func theViewCountsInstallsByCountryAndSaysWhenNoneWasSent() throws {
        let answers = ["us1": Self.answer([:]), "us2": Self.answer(["\"US\"": "\"us\""]), "gb": Self.answer(["\"US\"": "\"GB\""]),
                       "none": Self.answer([",\"countryOrRegion\":\"US\"": ""]), "odd": Self.answer(["\"US\"": "\"<script>\""])]
        let standIn = try AppleAdsStandIn(scripts: answers.mapValues { [.answer(200, $0)] })
        defer { standIn.stop() }
        let endpoint = try live.endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        for token in answers.keys { #expect(try live.post(endpoint, token).status == 202) }
        live.at(endpoint, start, plus: 0)
        let summary = json(try endpoint.get("/api/apple-ads/summary?from=2026-11-20&to=2026-11-20"))
        let countries = try #require(summary["countries"] as? [[String: Any]]).map { "\($0["country"]!)=\($0["installs"]!)" }
        #expect(countries == ["US=2", "GB=1", "not sent=1", "unreadable=1"], "\(countries)")
    }

    /// The placements survive the digest a start reads instead of the log.
    @Test func theTallyKeepsPlacementsAndPreOrdersThroughItsDigest() throws {
        var summary = AppleAdsSummary()
        summary.byStatus[.attributed] = 3
        summary.byStatus[.test] = 2
        summary.addAttributed(AppleAdsRecord(attribution: true, campaignID: 7, conversionType: "PreOrder", claimType: "Impression",
                                             supplyPlacement: "APPSTORE_PRODUCT_PAGES"), count: 2)
        summary.addAttributed(AppleAdsRecord(attribution: true, campaignID: 7, conversionType: "Download", countryOrRegion: "FR"), count: 1)
        var tally = AppleAdsTally()
        tally.add(summary, day: 20_000, site: "app.example")
        let bytes = tally.encoded()
        let (decoded, end) = try #require(AppleAdsTally.decode(bytes, at: 0))
        #expect(end == bytes.count)
        let back = decoded.summary(AppsSummary.Query(site: nil, from: 20_000, to: 20_000))
        #expect(back.placements == summary.placements && back.installs == summary.installs && back.byStatus == summary.byStatus)
        #expect(back.countries == ["FR": 1, "not sent": 2] && back.countries == summary.countries)
        // The day of Apple's test answers survives too: the setup view's after a start from digests.
        #expect(decoded.lastTestDay(site: "app.example") == 20_000 && decoded.lastTestDay(site: "shop.example") == nil)
        // Cut anywhere, it is refused, never half read.
        for cut in 0..<bytes.count { #expect(AppleAdsTally.decode(Array(bytes[..<cut]), at: 0) == nil, "cut at \(cut)") }
    }
}
