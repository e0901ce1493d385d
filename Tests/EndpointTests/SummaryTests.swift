import Foundation
import PCMRecords
import Primitives
import Testing
import RawHTTPClient
@testable import Demo
@testable import Endpoint

/// An endpoint filled by the demo's traffic, through real HTTP.
private func demoEndpoint(directory: String = temporaryDirectory()) throws -> LiveEndpoint {
    let endpoint = try LiveEndpoint(sites: Demo.sites, directory: directory) { $0.manualClock = true }
    try Demo.drive(port: endpoint.port, token: "test-token")
    return endpoint
}

private func summary(_ endpoint: LiveEndpoint, _ query: String) throws -> [String: Any] {
    let response = try endpoint.get("/api/summary" + query)
    #expect(response.status == 200, "\(response.bodyText)")
    return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
}

/// The summary's numbers, computed from the export line by line.
private struct Expected {
    var accepted = [String: Int]()
    var quarantined = [String: Int]()
    var late = 0
    var byCampaign = [String: Int]()
    var byConversion = [String: Int]()
    var reasons = [String: Int]()
    /// Accepted reports by campaign and conversion, per copy.
    var crosstab = [String: [String: Int]]()

    init(_ lines: [[String: Any]], site: String?, role: String?, from: String, to: String) {
        for line in lines {
            let day = String((line["received_at"] as! String).prefix(10))
            guard day >= from, day <= to, site == nil || line["site"] as? String == site,
                  role == nil || line["role"] as? String == role else { continue }
            let r = line["role"] as! String
            let reasons = line["reasons"] as! [String]
            if line["verdict"] as? String == "accepted" {
                accepted[r, default: 0] += 1
                if reasons.contains("late") { late += 1 }
                byCampaign["\(line["source_site"]!)/\(line["source_id"]!)/\(line["campaign"] ?? "-")/\(r)", default: 0] += 1
                byConversion["\(line["attributed_on_site"]!)/\(line["trigger_data"]!)/\(r)", default: 0] += 1
                let cell = "\(line["source_site"]!)/\(line["source_id"]!)/\(line["campaign"] ?? "-") × \(line["attributed_on_site"]!)/\(line["trigger_data"]!)"
                crosstab[r, default: [:]][cell, default: 0] += 1
            } else {
                quarantined[r, default: 0] += 1
                for reason in reasons { self.reasons["\(reason)/\(r)", default: 0] += 1 }
            }
        }
    }
}

private func counts(_ rows: Any?, key: ([String: Any]) -> String) -> [String: Int] {
    var out = [String: Int]()
    for row in rows as? [[String: Any]] ?? [] {
        for role in ["source", "destination"] where (row[role] as? Int ?? 0) > 0 {
            out[key(row) + "/" + role] = row[role] as? Int
        }
    }
    return out
}

@Suite struct SummaryTests {
    @Test(arguments: [
        (nil, nil, "2026-10-24", "2026-11-22"),
        ("shop.example", nil, "2026-11-01", "2026-11-30"),
        ("news.example", "source", "2026-11-05", "2026-11-12"),
        (nil, "destination", "2026-11-20", "2026-11-22"),
        ("app.example", nil, "2026-11-01", "2026-11-22"),
    ] as [(String?, String?, String, String)])
    func everyNumberMatchesTheExport(site: String?, role: String?, from: String, to: String) throws {
        let endpoint = try demoEndpoint()
        defer { endpoint.stop() }
        var query = "?from=\(from)&to=\(to)"
        if let site { query += "&site=\(site)" }
        if let role { query += "&role=\(role)" }
        let s = try summary(endpoint, query)
        let expected = Expected(try endpoint.export(), site: site, role: role, from: from, to: to)
        let accepted = s["accepted"] as! [String: Int], quarantined = s["quarantined"] as! [String: Int], late = s["late"] as! [String: Int]
        #expect(accepted["source"] == expected.accepted["source", default: 0])
        #expect(accepted["destination"] == expected.accepted["destination", default: 0])
        #expect(quarantined["source"]! + quarantined["destination"]! == expected.quarantined.values.reduce(0, +))
        #expect(late["source"]! + late["destination"]! == expected.late)
        #expect(counts(s["by_campaign"]) { "\($0["source_site"]!)/\($0["source_id"]!)/\($0["campaign"] as? String ?? "-")" } == expected.byCampaign)
        #expect(counts(s["by_conversion"]) { "\($0["site"]!)/\($0["trigger_data"]!)" } == expected.byConversion)
        #expect(counts(s["quarantined_by_reason"]) { "\($0["reason"]!)" } == expected.reasons)
        // Per day: the period's every day, summing to the accepted totals.
        let days = s["per_day"] as! [[String: Any]]
        #expect(days.first?["day"] as? String == from && days.last?["day"] as? String == to)
        #expect(days.reduce(0) { $0 + ($1["source"] as! Int) } == accepted["source"])
        #expect(days.reduce(0) { $0 + ($1["destination"] as! Int) } == accepted["destination"])
        // Campaign × conversion: one copy of each conversion, the one it names, cell by cell.
        let crosstab = try #require(s["crosstab"] as? [String: Any])
        let copy = try #require(crosstab["copy"] as? String)
        #expect(copy == role ?? (accepted["destination"]! > 0 || accepted["source"]! == 0 ? "destination" : "source"))
        let columns = (crosstab["conversions"] as? [[String: Any]] ?? []).map { "\($0["site"]!)/\($0["trigger_data"]!)" }
        var cells = [String: Int]()
        for row in crosstab["rows"] as? [[String: Any]] ?? [] {
            let campaign = "\(row["source_site"]!)/\(row["source_id"]!)/\(row["campaign"] as? String ?? "-")"
            let counts = row["counts"] as? [Int] ?? []
            #expect(counts.count == columns.count && row["total"] as? Int == counts.reduce(0, +))
            for (column, n) in zip(columns, counts) where n > 0 { cells[campaign + " × " + column] = n }
        }
        #expect(cells == expected.crosstab[copy, default: [:]])
        #expect(crosstab["total"] as? Int == accepted[copy])
        // The CSV holds the same cells, a row per campaign and its total.
        let csv = try endpoint.get("/api/summary/crosstab.csv" + query).bodyText.split(separator: "\r\n")
        #expect(csv.count == ((crosstab["rows"] as? [Any])?.count ?? 0) + 2)
        #expect(csv.last?.hasSuffix(",\(accepted[copy]!)") == true && csv.first?.hasSuffix("(\(copy) copies)") == true)
    }

    @Test func theDemoShowsEveryKindOfReport() throws {
        let endpoint = try demoEndpoint()
        defer { endpoint.stop() }
        let s = try summary(endpoint, "?from=2026-11-01&to=2026-11-22")
        let reasons = Set((s["quarantined_by_reason"] as! [[String: Any]]).map { $0["reason"] as! String })
        #expect(reasons.isSuperset(of: ["debug_timing", "no_matching_trigger", "unknown_source_id"]))
        #expect((s["late"] as! [String: Int])["destination"]! > 0)
        let names = Set((s["by_campaign"] as! [[String: Any]]).compactMap { $0["campaign"] as? String })
        #expect(names == ["Winter sale", "Gift guide", "Black Friday", "In-app banner"])
        let conversions = Set((s["by_conversion"] as! [[String: Any]]).compactMap { $0["conversion"] as? String })
        #expect(conversions == ["purchase", "signup", "add_to_cart"])
        #expect((s["rejected_by_rule"] as! [[String: Any]]).reduce(0) { $0 + ($1["count"] as! Int) } == 4)
        let delays = (s["delay_hours"] as! [[String: Any]]).map { $0["count"] as! Int }
        #expect(delays[1...4].reduce(0, +) > delays[5...].reduce(0, +), "most reports arrive 24–48 h after their trigger")
    }

    @Test func theSummaryIsRebuiltFromTheLogAfterARestart() throws {
        let directory = temporaryDirectory()
        var before: [String: Any]
        do {
            let endpoint = try demoEndpoint(directory: directory)
            before = try summary(endpoint, "?from=2026-11-01&to=2026-11-30")
            endpoint.stop()
        }
        let endpoint = try LiveEndpoint(sites: Demo.sites, directory: directory) { $0.manualClock = true }
        defer { endpoint.stop() }
        endpoint.server.waitUntilSummaryIsReady()
        var after = try summary(endpoint, "?from=2026-11-01&to=2026-11-30")
        // Refused requests are counted since start; everything else comes back from the log.
        #expect((before.removeValue(forKey: "rejected_by_rule") as? [Any])?.isEmpty == false)
        #expect((after.removeValue(forKey: "rejected_by_rule") as? [Any])?.isEmpty == true)
        #expect(NSDictionary(dictionary: before) == NSDictionary(dictionary: after))
    }

    @Test func csvExportsAreRFC4180AndMatchTheExport() throws {
        let endpoint = try demoEndpoint()
        defer { endpoint.stop() }
        let reports = try endpoint.get("/api/reports.csv")
        #expect(reports.status == 200)
        #expect(reports.header("Content-Type")?.hasPrefix("text/csv") == true)
        let rows = reports.bodyText.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(rows.first == ReportExportCodec().columns.joined(separator: ","))
        #expect(rows.count - 1 == (try endpoint.export()).count)

        let table = try endpoint.get("/api/summary.csv?from=2026-11-01&to=2026-11-30").bodyText
        let lines = table.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first?.hasPrefix("day,site,role,verdict") == true)
        let total = lines.dropFirst().reduce(0) { $0 + Int($1.split(separator: ",").last!)! }
        #expect(total == (try endpoint.export("?since=2026-11-01T00:00:00Z&until=2026-12-01T00:00:00Z")).count)
    }

    @Test func csvFieldsAreQuotedAndNeverFormulas() {
        #expect(CSV.field("plain") == "plain")
        #expect(CSV.field("a,b") == "\"a,b\"")
        #expect(CSV.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.field("two\nlines") == "\"two\nlines\"")
        #expect(CSV.field("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(CSV.field("-12") == "-12")
        #expect(CSV.field("@sum") == "\"'@sum\"")
    }

    @Test func badSummaryQueriesAreRefused() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for (query, field) in [("?from=2026-13-01", "from"), ("?role=both", "role"), ("?colour=red", "colour"), ("?from=2026-11-10&to=2026-11-01", "to")] {
            let response = try endpoint.get("/api/summary" + query)
            #expect(response.status == 400, "\(query)")
            #expect(json(response)["field"] as? String == field)
        }
        #expect(try endpoint.get("/api/summary", token: "wrong").status == 401)
        // An empty endpoint answers zeros, not an error.
        let empty = try summary(endpoint, "")
        #expect((empty["accepted"] as! [String: Int]) == ["source": 0, "destination": 0])
        #expect((empty["per_day"] as! [Any]).count == 30)
    }
}

@Suite struct PageTests {
    @Test func servesThePageWithTypesAndCaching() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let page = try endpoint.get("/", token: nil)
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Content-Security-Policy")?.contains("default-src 'self'") == true)
        #expect(page.header("Set-Cookie") == nil)
        #expect(page.bodyText.contains("<script src=\"/app.js\""))
        #expect(try endpoint.get("/app.js", token: nil).header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(try endpoint.get("/app.css", token: nil).header("Content-Type") == "text/css; charset=utf-8")
        let etag = try #require(page.header("ETag"))
        #expect(page.header("Cache-Control") == "no-cache")
        let again = try httpRequest(port: endpoint.port, method: "GET", path: "/", headers: [("If-None-Match", etag)])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        // HEAD's Content-Length is the HTTP layer's, so this one goes over a socket.
        let head = try httpRequest(port: endpoint.port, method: "HEAD", path: "/index.html")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(page.body.count))
    }

    @Test(arguments: [
        "/../Package.swift", "/..%2fPackage.swift", "/%2e%2e/Package.swift", "/%2E%2E%2FPackage.swift", "/..%5cPackage.swift",
        "/app.js%00.html", "/.hidden.html", "/nonexistent.html", "/index.html/", "//etc/passwd", "/%252e%252e/x.html",
        "/README.md", "/app.js.bak",
    ])
    func nothingOutsideThePublicFolder(path: String) throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let response = try endpoint.get(path, token: nil)
        #expect(response.status == 404 || response.status == 400, "\(path) answered \(response.status)")
        #expect(!response.bodyText.contains("swift-tools-version"))
    }
}
