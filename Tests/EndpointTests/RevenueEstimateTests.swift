import Foundation
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// Revenue estimated from conversion-value ranges, checked against our own arithmetic on what
/// the exports list: per campaign, per day, in the crosstab and its CSV, and on the overview.
@Suite(.serialized) struct RevenueEstimateTests {
    static let v1 = SchemaVersionTests.app(#"{"from":0,"to":9,"meaning":"tutorial"},{"from":10,"to":39,"meaning":"small","revenue":{"min":0.99,"max":9.99,"currency":"USD"}},{"from":40,"to":63,"meaning":"big","revenue":{"min":10,"max":49.99,"currency":"USD"}}"#)
    static let v2 = SchemaVersionTests.app(#"{"from":0,"to":9,"meaning":"tutorial"},{"from":10,"to":39,"meaning":"small","revenue":{"min":0.99,"max":9.99,"currency":"USD"}},{"from":40,"to":63,"meaning":"big","revenue":{"min":20,"max":100,"currency":"EUR"}}"#)

    static func postback(_ n: Int, campaign: String, value: Int) -> [UInt8] {
        let payload = #"{"impression-type":"app-impression","ad-network-identifier":"demo.adattributionkit","source-identifier":"\#(campaign)","advertised-item-identifier":\#(DemoPostbacks.appID),"conversion-type":"download","postback-identifier":"\#(DemoPostbacks.uuid(800_000 + n))","did-win":true,"postback-sequence-index":0,"marketplace-identifier":"com.apple.AppStore"}"#
        return Array(#"{"jws-string":"\#(DemoPostbacks.jws(payload))","ad-interaction-type":"click","conversion-value":\#(value)}"#.utf8)
    }

    struct Sum: Equatable, CustomStringConvertible {
        var low = 0.0, high = 0.0, postbacks = 0
        var description: String { String(format: "%d: %.2f–%.2f", postbacks, low, high) }
        static func == (a: Sum, b: Sum) -> Bool { a.postbacks == b.postbacks && abs(a.low - b.low) < 0.006 && abs(a.high - b.high) < 0.006 }
    }

    static func sum(_ object: [String: Any]) -> Sum {
        Sum(low: (object["low"] as! NSNumber).doubleValue, high: (object["high"] as! NSNumber).doubleValue, postbacks: object["postbacks"] as! Int)
    }

    @Test func estimatesAreTheExportsRangesAddedUp() throws {
        let endpoint = try SchemaVersionTests.start(temporaryDirectory())
        defer { endpoint.stop() }
        #expect(SchemaVersionTests.admin(endpoint, "POST", Self.v1).status == 201)
        var n = 0
        func send(_ campaign: String, _ values: [Int]) throws {
            for value in values {
                n += 1
                try SchemaVersionTests.send(endpoint, Self.postback(n, campaign: campaign, value: value))
            }
        }
        try send("5678", [12, 45, 3, 63, 39])
        try send("4321", [40, 40, 10])
        endpoint.clock.set("2026-11-21T12:00:00Z")
        try send("5678", [50, 11])
        // The big range changes currency: the days spanning the change have no estimate for it.
        #expect(SchemaVersionTests.admin(endpoint, "PUT", Self.v2).status == 200)
        endpoint.clock.set("2026-11-23T00:00:00Z")
        try send("5678", [44, 20])
        // Thirteen days after the change: wholly under version 2.
        endpoint.clock.set("2026-12-05T00:00:00Z")
        try send("4321", [60, 61, 5])

        // Our own arithmetic, from the exports and the registered versions.
        let apps = try JSONSerialization.jsonObject(with: Data(try endpoint.get("/api/apps").body)) as! [[String: Any]]
        let versions = apps[0]["schema_versions"] as! [[String: Any]]
        func range(_ version: Int, _ value: Int) -> (String, Double, Double)? {
            let fine = (versions[version - 1]["schema"] as! [String: Any])["fine"] as! [[String: Any]]
            guard let r = fine.first(where: { ($0["from"] as! Int) <= value && value <= ($0["to"] as! Int) }),
                  let revenue = r["revenue"] as? [String: Any] else { return nil }
            return (revenue["currency"] as! String, (revenue["min"] as! NSNumber).doubleValue, (revenue["max"] as! NSNumber).doubleValue)
        }
        var byCampaign: [String: Sum] = [:], byDay: [String: Sum] = [:], totals: [String: Sum] = [:], without = 0
        for line in try endpoint.get("/api/postbacks").bodyText.split(separator: "\n") {
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let value = row["conversion-value"] as! Int
            guard let version = row["schema_version"] as? Int, let (currency, low, high) = range(version, value) else {
                without += 1
                continue
            }
            for (key, into) in [("\(row["source-identifier"]!) \(currency)", 0), ("\((row["received_at"] as! String).prefix(10)) \(currency)", 1), (currency, 2)] {
                func add(_ s: inout Sum) { s.low += low; s.high += high; s.postbacks += 1 }
                switch into {
                case 0: add(&byCampaign[key, default: Sum()])
                case 1: add(&byDay[key, default: Sum()])
                default: add(&totals[key, default: Sum()])
                }
            }
        }
        #expect(without == 4, "two are tutorials, whose range names no revenue, and two span the change")
        #expect(totals.keys.sorted() == ["EUR", "USD"])

        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-20&to=2026-12-05"))
        let revenue = summary["revenue"] as! [String: Any]
        #expect((revenue["estimate"] as! String).contains("not a measured amount"))
        #expect(revenue["postbacks_without_estimate"] as? Int == without)
        var shown: [String: Sum] = [:]
        for row in revenue["by_campaign"] as! [[String: Any]] {
            let s = Self.sum(row)
            shown["\(row["campaign"]!) \(row["currency"]!)"] = s
            // The middle is the middle.
            #expect(abs((row["middle"] as! NSNumber).doubleValue - (s.low + s.high) / 2) < 0.006)
        }
        #expect(shown == byCampaign)
        var days: [String: Sum] = [:]
        for row in revenue["per_day"] as! [[String: Any]] { days["\(row["day"]!) \(row["currency"]!)"] = Self.sum(row) }
        #expect(days == byDay)
        var shownTotals: [String: Sum] = [:]
        for row in revenue["totals"] as! [[String: Any]] { shownTotals[row["currency"] as! String] = Self.sum(row) }
        #expect(shownTotals == totals)

        // The crosstab's rows add up to the same, and its CSV says the same to the cent.
        var crosstab: [String: Sum] = [:]
        for row in (summary["crosstab"] as! [String: Any])["rows"] as! [[String: Any]] {
            for r in row["revenue"] as! [[String: Any]] {
                let s = Self.sum(r), key = r["currency"] as! String
                crosstab[key, default: Sum()].low += s.low
                crosstab[key, default: Sum()].high += s.high
                crosstab[key, default: Sum()].postbacks += s.postbacks
            }
        }
        #expect(crosstab == totals)
        let csv = try endpoint.get("/api/apps/summary/crosstab.csv?site=app.example&from=2026-11-20&to=2026-12-05").bodyText
            .split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = csv[0], total = csv.last!
        for (currency, s) in totals {
            let low = try #require(header.firstIndex(of: "estimated revenue low (\(currency))"))
            let high = try #require(header.firstIndex(of: "estimated revenue high (\(currency))"))
            #expect(abs(Double(total[low])! - s.low) < 0.006 && abs(Double(total[high])! - s.high) < 0.006, "\(currency)")
        }
        #expect(csv.allSatisfy { $0.count == header.count }, "every line of the CSV has every column")

        // The overview's app installs line: the same totals, and per day.
        let overview = json(try endpoint.get("/api/overview?from=2026-11-20&to=2026-12-05"))
        let installs = (overview["channels"] as! [[String: Any]]).first { $0["id"] as? String == "app_installs" }!
        let currencies = (installs["revenue"] as! [String: Any])["currencies"] as! [[String: Any]]
        for c in currencies {
            let currency = c["currency"] as! String
            #expect(Self.sum(c["total"] as! [String: Any]) == totals[currency], "\(currency)")
            let perDay = (c["per_day"] as! [[String: Any]]).map(Self.sum)
            #expect(perDay.count == 16)
            let sum = perDay.reduce(into: Sum()) { $0.low += $1.low; $0.high += $1.high; $0.postbacks += $1.postbacks }
            #expect(sum == totals[currency])
            #expect(!(c["top"] as! [Any]).isEmpty)
        }
        #expect(currencies.count == 2)
    }

    /// SKAdNetwork 1.0 and 2.0 postbacks carry a signature no key here can check: anyone could
    /// send them, so no money is estimated from them, and cost per install does not count them.
    @Test func postbacksNoKeyCouldCheckAddNoMoney() throws {
        let endpoint = try SchemaVersionTests.start(temporaryDirectory())
        defer { endpoint.stop() }
        #expect(SchemaVersionTests.admin(endpoint, "POST", Self.v1).status == 201)
        try SchemaVersionTests.send(endpoint, Self.postback(1, campaign: "5678", value: 45))
        for n in 0..<3 {
            let body = #"{"version":"2.0","ad-network-id":"forged.skadnetwork","campaign-id":42,"app-id":\#(DemoPostbacks.appID),"transaction-id":"\#(DemoPostbacks.uuid(870_000 + n))","redownload":false,"conversion-value":63,"attribution-signature":"AAAA"}"#
            let answer = try httpRequest(port: endpoint.port, method: "POST", path: DemoPostbacks.skadnetworkPath, host: "app.example", body: Array(body.utf8))
            #expect(answer.status == 200 && json(answer)["signature"] as? String == "unverifiable", "\(answer.bodyText)")
        }
        let upload = SpendTests.upload(endpoint, SpendTests.header + "2026-11-20,\(DemoPostbacks.appID),forged.skadnetwork,42,10,USD\r\n")
        #expect(upload.status == 200, "\(upload.bodyText)")
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-20&to=2026-11-20"))
        let revenue = summary["revenue"] as! [String: Any]
        #expect((revenue["totals"] as! [[String: Any]]).map(Self.sum) == [Sum(low: 10, high: 49.99, postbacks: 1)])
        #expect(revenue["postbacks_without_estimate"] as? Int == 3)
        let forged = ((summary["spend_and_return"] as! [String: Any])["campaigns"] as! [[String: Any]]).first { $0["campaign"] as? String == "42" }
        #expect(forged?["installs"] as? Int == 0 && forged?["unverifiable_installs"] as? Int == 3 && forged?["cost_per_install"] is NSNull)
        #expect(forged?["revenue"] is NSNull)
    }
}
