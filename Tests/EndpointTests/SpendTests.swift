import Foundation
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// Spend and return through the live endpoint: an upload, cost per install and return on ad
/// spend against the revenue estimate checked against our own arithmetic, and whose spend each
/// token may give and read.
@Suite(.serialized) struct SpendTests {
    static let admin = [("Authorization", "Bearer test-token")]
    static let header = "date,app_id,ad_network,campaign,spend,currency\r\n"

    static func start() throws -> LiveEndpoint {
        let endpoint = try LiveEndpoint(sites: ["app.example", "news.example"], directory: temporaryDirectory(), startingAt: "2026-11-20T10:00:00Z") { c in
            c.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)]
        }
        for body in [#"{"id":"acme","name":"Acme Games","sites":["app.example"]}"#, #"{"id":"news","name":"News Daily","sites":["news.example"]}"#] {
            #expect(endpoint.request("POST", "/api/advertisers", headers: admin, body: Array(body.utf8)).status == 201)
        }
        #expect(SchemaVersionTests.admin(endpoint, "POST", RevenueEstimateTests.v1).status == 201)
        return endpoint
    }

    static func upload(_ endpoint: LiveEndpoint, _ csv: String, token: String = "test-token") -> RawResponse {
        endpoint.request("POST", "/api/spend", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "text/csv")], body: Array(csv.utf8))
    }

    @Test func costPerInstallAndReturnAreTheSpendAgainstTheExports() throws {
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        var n = 0
        // "56": a lower privacy tier's two digits, which may be 5678's or a sibling's.
        for (campaign, values) in [("5678", [12, 45, 63]), ("4321", [40, 3]), ("56", [20])] {
            for value in values {
                n += 1
                try SchemaVersionTests.send(endpoint, RevenueEstimateTests.postback(200 + n, campaign: campaign, value: value))
            }
        }
        let app = DemoPostbacks.appID
        let csv = Self.header + "2026-11-19,\(app),demo.adattributionkit,5678,40.00,USD\r\n2026-11-20,\(app),demo.adattributionkit,5678,20.5,USD\r\n"
            + "2026-11-20,\(app),demo.adattributionkit,4321,10,EUR\r\n2026-11-20,\(app),demo.adattributionkit,9999,7,USD\r\n"
        let uploaded = Self.upload(endpoint, csv)
        #expect(uploaded.status == 200 && json(uploaded)["rows"] as? Int == 4, "\(uploaded.bodyText)")
        // Sent again, corrected: the rows are replaced, not added.
        let corrected = Self.upload(endpoint, Self.header + "2026-11-20,\(app),demo.adattributionkit,5678,20.00,USD\r\n")
        #expect(json(corrected)["replaced"] as? Int == 1)

        // Our arithmetic: installs and revenue ranges per campaign from the export.
        var installs: [String: Int] = [:], low: [String: Double] = [:], high: [String: Double] = [:]
        for line in try endpoint.get("/api/postbacks").bodyText.split(separator: "\n") {
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let campaign = row["source-identifier"] as! String, value = row["conversion-value"] as! Int
            installs[campaign, default: 0] += 1
            if (10...39).contains(value) { low[campaign, default: 0] += 0.99; high[campaign, default: 0] += 9.99 }
            if (40...63).contains(value) { low[campaign, default: 0] += 10; high[campaign, default: 0] += 49.99 }
        }
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-19&to=2026-11-20"))
        let section = summary["spend_and_return"] as! [String: Any]
        let rows = section["campaigns"] as! [[String: Any]]
        func row(_ campaign: String) -> [String: Any]? { rows.first { $0["campaign"] as? String == campaign } }
        func number(_ value: Any?) -> Double? { (value as? NSNumber)?.doubleValue }
        let winter = try #require(row("5678"))
        #expect(number(winter["spend"]) == 60 && winter["installs"] as? Int == installs["5678"] && winter["currency"] as? String == "USD")
        #expect(winter["installs_with_shorter_ids"] as? Int == 1 && winter["unverifiable_installs"] as? Int == 0)
        #expect(abs(number(winter["cost_per_install"])! - 60 / Double(installs["5678"]!)) < 0.006)
        let roas = winter["roas"] as! [String: Any]
        #expect(abs(number(roas["low"])! - low["5678"]! / 60) < 0.0001 && abs(number(roas["high"])! - high["5678"]! / 60) < 0.0001)
        #expect(abs(number(roas["middle"])! - (low["5678"]! + high["5678"]!) / 2 / 60) < 0.0001)
        // Spend in EUR against revenue in USD: not compared, and said so.
        let other = try #require(row("4321"))
        #expect(other["revenue"] is NSNull && (other["roas"] as! [String: Any])["middle"] is NSNull)
        #expect(other["revenue_in_other_currencies"] as? [String] == ["USD"])
        // Spend on a campaign no postback names: no installs, no cost per install.
        let none = try #require(row("9999"))
        #expect(none["installs"] as? Int == 0 && none["cost_per_install"] is NSNull)
        // A period without the first day leaves its spend out.
        let later = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-20&to=2026-11-20"))
        let laterWinter = ((later["spend_and_return"] as! [String: Any])["campaigns"] as! [[String: Any]]).first { $0["campaign"] as? String == "5678" }
        #expect(number(laterWinter?["spend"]) == 20)
    }

    @Test func spendIsItsAdvertisersOwn() throws {
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        let app = DemoPostbacks.appID
        let acme = try AccessTests.token(endpoint, advertiser: "acme"), news = try AccessTests.token(endpoint, advertiser: "news")
        let everyone = try AccessTests.token(endpoint, advertiser: nil)
        let line = Self.header + "2026-11-20,\(app),demo.adattributionkit,5678,10,USD\r\n"
        // Acme's own token gives Acme's spend; another advertiser's is refused at the row; a token of every advertiser only reads.
        #expect(Self.upload(endpoint, line, token: acme).status == 200)
        // Another advertiser's app is as unknown to it as an app never registered: nothing of it shows.
        let foreign = Self.upload(endpoint, line, token: news)
        let unregistered = Self.upload(endpoint, line.replacingOccurrences(of: String(app), with: "1234"), token: news)
        #expect(foreign.status == 422 && json(foreign)["rule"] as? String == "unknown_app" && json(foreign)["field"] as? String == "row 1: app_id")
        #expect(!foreign.bodyText.contains("app.example") && (json(foreign)["detail"] as? String)?.replacingOccurrences(of: String(app), with: "1234") == json(unregistered)["detail"] as? String)
        let reader = Self.upload(endpoint, line, token: everyone)
        #expect(reader.status == 403 && json(reader)["rule"] as? String == "viewer_token_read_only")
        func rows(_ token: String) throws -> Int {
            let answer = endpoint.request("GET", "/api/spend", headers: [("Authorization", "Bearer \(token)")])
            return (try JSONSerialization.jsonObject(with: Data(answer.body)) as? [Any])?.count ?? -1
        }
        #expect(try rows(acme) == 1 && rows(news) == 0 && rows(everyone) == 1 && rows("test-token") == 1)
        // News cannot remove Acme's spend; Acme can.
        #expect(json(endpoint.request("DELETE", "/api/spend?from=2026-11-01&to=2026-11-30", headers: [("Authorization", "Bearer \(news)")]))["removed"] as? Int == 0)
        #expect(json(endpoint.request("DELETE", "/api/spend?from=2026-11-01&to=2026-11-30", headers: [("Authorization", "Bearer \(acme)")]))["removed"] as? Int == 1)
        // A body past the request limit is refused before it is read; a bad one names its row.
        let huge = Self.header + String(repeating: "2026-11-20,\(app),demo.adattributionkit,5678,10,USD\r\n", count: 3000)
        #expect((400..<500).contains(Self.upload(endpoint, huge).status))
        let bad = Self.upload(endpoint, Self.header + "2026-11-20,\(app),demo.adattributionkit,=cmd|' /C calc'!A0,10,USD\r\n")
        #expect(bad.status == 422 && json(bad)["field"] as? String == "row 1: campaign" && json(bad)["rule"] as? String == "invalid_campaign")
        #expect(endpoint.request("DELETE", "/api/spend", headers: Self.admin).status == 400)
        #expect(endpoint.request("GET", "/api/spend?from=2026-11-30&to=2026-11-01", headers: Self.admin).status == 400)
    }
}
