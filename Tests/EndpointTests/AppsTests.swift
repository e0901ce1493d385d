import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// App developers' registrations and the Apps view, whose numbers must equal what
/// `/api/postbacks` lists.
@Suite struct AppsTests {
    static let app = #"{"app_id":1000000003,"site":"app.example","name":"Example Game","schema":{"fine":[{"from":0,"to":9,"meaning":"tutorial","events":["tutorial_done"]},{"from":10,"to":63,"meaning":"purchase","revenue":{"min":0.99,"max":49.99,"currency":"USD"}}],"coarse":{"low":"installed","medium":"engaged","high":"paid"}}}"#
    static let network = #"{"id":"generated.adattributionkit","name":"Generated Ads","campaigns":[{"source_identifier":"6789","name":"Winter"},{"campaign_id":42,"name":"Legacy"}]}"#

    func post(_ endpoint: LiveEndpoint, _ path: String, _ body: String) -> RawResponse {
        endpoint.request("POST", path, headers: [("Authorization", "Bearer test-token")], body: Array(body.utf8))
    }

    @Test func registrationsFollowTheRulesAndSurviveARestart() throws {
        let directory = temporaryDirectory()
        var endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory)
        #expect(post(endpoint, "/api/apps", Self.app).status == 201)
        #expect(post(endpoint, "/api/apps", Self.app).status == 409)
        #expect(post(endpoint, "/api/ad-networks", Self.network).status == 201)
        let refusals: [(String, String, String, String)] = [
            ("/api/apps", Self.app.replacingOccurrences(of: #""to":9"#, with: #""to":10"#), "schema.fine[1]", "overlapping_range"),
            ("/api/apps", Self.app.replacingOccurrences(of: #""to":63"#, with: #""to":64"#), "schema.fine[1]", "out_of_range"),
            ("/api/apps", Self.app.replacingOccurrences(of: "USD", with: "usd"), "schema.fine[1].revenue.currency", "invalid_currency"),
            ("/api/apps", Self.app.replacingOccurrences(of: #""low""#, with: #""lowest""#), "schema.coarse.lowest", "unknown_field"),
            ("/api/apps", Self.app.replacingOccurrences(of: "app.example", with: "localhost"), "site", "not_registrable_domain"),
            ("/api/ad-networks", Self.network.replacingOccurrences(of: #""6789""#, with: #""67890""#), "campaigns[0].source_identifier", "invalid_source_identifier"),
            ("/api/ad-networks", Self.network.replacingOccurrences(of: #""campaign_id":42"#, with: #""campaign_id":101"#), "campaigns[1].campaign_id", "out_of_range"),
        ]
        for (path, body, field, rule) in refusals {
            let response = post(endpoint, path, body)
            #expect(response.status == 422, "\(rule)")
            #expect(json(response)["field"] as? String == field && json(response)["rule"] as? String == rule, "\(json(response))")
        }
        endpoint.stop()
        endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory)
        defer { endpoint.stop() }
        let apps = try JSONSerialization.jsonObject(with: Data(try endpoint.get("/api/apps").body)) as! [[String: Any]]
        #expect(apps.count == 1 && apps[0]["name"] as? String == "Example Game")
        #expect(endpoint.request("DELETE", "/api/ad-networks?id=generated.adattributionkit", headers: [("Authorization", "Bearer test-token")]).status == 204)
        #expect(endpoint.request("DELETE", "/api/ad-networks?id=generated.adattributionkit", headers: [("Authorization", "Bearer test-token")]).status == 404)
    }

    @Test func theConfigFileRegistersAppsAndTrustsKeys() throws {
        let document = try PostbackPathTests.vectors("generated_postbacks")
        let directory = temporaryDirectory()
        let config = """
        {"sites":["app.example"],"data":"\(directory)","postback_keys":{"\(document["test_key_name"] as! String)":"\(document["test_key_spki"] as! String)"},
         "signature_threads":1,"max_postback_bytes":4096,"apps":[\(Self.app)],"ad_networks":[\(Self.network)]}
        """
        let path = directory + "/config.json"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        guard case .run(var configuration) = try EndpointConfiguration.parse(arguments: ["--config", path, "--port", "0"], environment: [:]) else {
            Issue.record("the config file was not read")
            return
        }
        #expect(configuration.signatureThreads == 1 && configuration.maxPostbackBytes == 4096 && configuration.postbackKeys.count == 1)
        configuration.adminToken = "test-token"
        configuration.accessLog = false
        configuration.publicDirectory = repositoryRoot + "/Public"
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        try TestTokenKeys.seed(configuration.dataDirectory, sites: configuration.sites)
        let server = try EndpointServer(configuration: configuration)
        let port = try server.start()
        defer { server.shutdown(); server.waitUntilStopped() }
        let vector = try #require((document["vectors"] as! [[String: Any]]).first { $0["signature"] as? String == "test_key" })
        let path2 = vector["protocol"] as! String == "skadnetwork" ? PostbackPathTests.skadnetwork : PostbackPathTests.adattributionkit
        let answer = try httpRequest(port: port, method: "POST", path: path2, host: "app.example", body: Array((vector["body"] as! String).utf8))
        #expect(json(answer)["signature"] as? String == "test_key")
        let apps = try httpRequest(port: port, method: "GET", path: "/api/apps", headers: [("Authorization", "Bearer test-token")])
        #expect(apps.bodyText.contains("Example Game"))
        // A key that is not P-256, or Apple's own, stops the start with the reason.
        for bad in ["{\"postback_keys\":{\"k\":\"junk\"},\"dev\":true}", "{\"postback_keys\":{\"k\":\"\(SKAdNetworkKeysForTests.apple)\"},\"dev\":true}"] {
            try bad.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: (any Error).self) { try EndpointConfiguration.parse(arguments: ["--config", path], environment: [:]) }
        }
    }

    @Test func theAppsViewCountsWhatTheExportLists() throws {
        let document = try PostbackPathTests.vectors("generated_postbacks")
        let endpoint = try LiveEndpoint(sites: ["app.example"]) { configuration in
            configuration.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
        }
        defer { endpoint.stop() }
        #expect(post(endpoint, "/api/apps", Self.app).status == 201)
        #expect(post(endpoint, "/api/ad-networks", Self.network).status == 201)
        let vectors = document["vectors"] as! [[String: Any]]
        for (i, vector) in vectors.enumerated() {
            let path = vector["protocol"] as! String == "skadnetwork" ? PostbackPathTests.skadnetwork : PostbackPathTests.adattributionkit
            let body = Array((vector["body"] as! String).utf8)
            #expect(try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: body).status == 200)
            // Some arrive twice, as devices retry.
            if i % 4 == 0 { #expect(try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: body).status == 200) }
        }
        let rows = try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-01&to=2026-11-30"))
        let totals = summary["postbacks"] as! [String: Int]
        let accepted = rows.filter { $0["verdict"] as? String == "accepted" }
        #expect(totals["stored"] == rows.count && totals["accepted"] == accepted.count)
        #expect(totals["duplicates_received"] == rows.reduce(0) { $0 + ($1["duplicates_received"] as! Int) })
        #expect(totals["duplicates_received"] == (vectors.count + 3) / 4)
        var signatures: [String: Int] = [:]
        for row in rows { signatures[row["signature"] as! String, default: 0] += 1 }
        #expect(summary["signatures"] as? [String: Int] == signatures)

        // Installs, redownloads and re-engagements: accepted, winning, first window.
        var kinds: [String: Int] = [:]
        for row in accepted where (row["postback-sequence-index"] as? Int ?? 0) == 0 && row["did-win"] as? Bool != false {
            let kind: String
            if row["protocol"] as? String == "skadnetwork" {
                kind = row["redownload"] as? Bool == true ? "redownloads" : "installs"
            } else {
                kind = ["redownload": "redownloads", "re-engagement": "re_engagements"][row["conversion-type"] as! String] ?? "installs"
            }
            kinds[kind, default: 0] += 1
        }
        let conversions = summary["conversions"] as! [[String: Any]]
        for kind in ["installs", "redownloads", "re_engagements"] {
            #expect(conversions.reduce(0) { $0 + ($1[kind] as! Int) } == kinds[kind, default: 0], "\(kind)")
        }
        #expect(kinds["re_engagements", default: 0] > 0 && kinds["installs", default: 0] > 0)
        // Campaign names from the registry, values through the app's schema.
        let winter = conversions.filter { $0["campaign_name"] as? String == "Winter" }
        #expect(!winter.isEmpty && winter.allSatisfy { ($0["campaign"] as! String).hasPrefix("67") })
        let fine = summary["fine_values"] as! [[String: Any]]
        #expect(fine.reduce(0) { $0 + ($1["count"] as! Int) } == accepted.filter { $0["conversion-value"] != nil }.count)
        // A value means what the schemas of the apps that sent it all say: only app 1000000003 has
        // one, so a value some other app sent too is shown as its number.
        func apps(_ field: String, _ value: String) -> Set<String> {
            Set(accepted.filter { $0[field].map { "\($0)" } == value }.map { row in
                (row["app-id"] ?? row["advertised-item-identifier"]).map { "\($0)" } ?? ""
            })
        }
        for row in fine {
            let value = row["value"] as! Int
            let expected: String? = apps("conversion-value", String(value)) == ["1000000003"] ? (value < 10 ? "tutorial" : "purchase") : nil
            #expect(row["meaning"] as? String == expected, "fine value \(value)")
        }
        #expect(fine.contains { $0["meaning"] as? String != nil } && fine.contains { $0["meaning"] is NSNull })
        let coarse = summary["coarse_values"] as! [[String: Any]]
        for row in coarse {
            let value = row["value"] as! String
            let expected = apps("coarse-conversion-value", value) == ["1000000003"] ? ["low": "installed", "medium": "engaged", "high": "paid"][value] : nil
            #expect(row["meaning"] as? String == expected, "coarse value \(value)")
        }
        #expect(coarse.reduce(0) { $0 + ($1["count"] as! Int) } == accepted.filter { $0["coarse-conversion-value"] != nil }.count)
        let windows = summary["postback_windows"] as! [[String: Any]]
        #expect(windows.reduce(0) { $0 + ($1["count"] as! Int) } == accepted.count)
        let reasons = summary["quarantine_reasons"] as! [String: Int]
        #expect(reasons["signature_invalid"] == rows.filter { $0["signature"] as? String == "invalid" }.count)
        #expect(json(try endpoint.get("/api/apps/summary?site=other.example"))["postbacks"] as? [String: Int] == ["accepted": 0, "development": 0, "duplicates_received": 0, "quarantined": 0, "stored": 0])

        // Campaign × what the value means, from the export: every accepted postback, its value
        // read through app 1000000003's schema (others have none, so the value itself).
        var expected: [String: Int] = [:]
        for row in accepted {
            let skadnetwork = row["protocol"] as? String == "skadnetwork"
            let network = (row[skadnetwork ? "ad-network-id" : "ad-network-identifier"] as? String) ?? ""
            let campaign = (row["source-identifier"] as? String) ?? (row["campaign-id"].map { "\($0)" }) ?? ""
            let app = (row[skadnetwork ? "app-id" : "advertised-item-identifier"]).map { "\($0)" } ?? ""
            let meaning: String
            if let value = row["conversion-value"] as? Int {
                meaning = app == "1000000003" ? (value < 10 ? "tutorial" : "purchase") : String(value)
            } else if let value = row["coarse-conversion-value"] as? String {
                meaning = app == "1000000003" ? ["low": "installed", "medium": "engaged", "high": "paid"][value]! : value
            } else {
                meaning = "no value"
            }
            expected["\(network)/\(campaign)/\(app) × \(meaning)", default: 0] += 1
        }
        let crosstab = summary["crosstab"] as! [String: Any]
        let columns = (crosstab["columns"] as! [[String: Any]]).map { $0["meaning"] as! String }
        var cells: [String: Int] = [:]
        for row in crosstab["rows"] as! [[String: Any]] {
            let counts = row["counts"] as! [Int]
            #expect(row["total"] as? Int == counts.reduce(0, +))
            for (column, n) in zip(columns, counts) where n > 0 {
                cells["\(row["ad_network"]!)/\(row["campaign"]!)/\(row["app_id"]!) × \(column)", default: 0] += n
            }
        }
        #expect(cells == expected)
        #expect(crosstab["total"] as? Int == accepted.count)
        // The CSV: a row per campaign, a column per meaning, the same total.
        let csv = try endpoint.get("/api/apps/summary/crosstab.csv?site=app.example&from=2026-11-01&to=2026-11-30").bodyText.split(separator: "\r\n")
        #expect(csv.count == (crosstab["rows"] as! [Any]).count + 2 && csv.last?.hasSuffix(",\(accepted.count)") == true)
        #expect(csv.first?.contains("fine: tutorial") == true && csv.first?.hasSuffix("total postbacks") == true)
        // Meanings from the schema, values without one in their order, low to high, then none.
        #expect(columns.contains("tutorial") && columns.last == "no value", "\(columns)")
        #expect(columns.firstIndex(of: "low")! < columns.firstIndex(of: "high")! && columns.firstIndex(of: "4")! < columns.firstIndex(of: "11")!)

        // Installs per day: every day of the period, summing to the conversions.
        let perDay = summary["per_day"] as! [[String: Any]]
        #expect(perDay.count == 30 && perDay.first?["day"] as? String == "2026-11-01")
        for kind in ["installs", "redownloads", "re_engagements"] {
            #expect(perDay.reduce(0) { $0 + ($1[kind] as! Int) } == kinds[kind, default: 0], "\(kind) per day")
        }
    }
}

enum SKAdNetworkKeysForTests {
    static let apple = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="
}
