import Foundation
import Testing
@testable import Endpoint

/// The files operators load beside the endpoint (deploy/prometheus/, deploy/grafana/) name only
/// series a real `/metrics` answer has, every alert has a runbook section and a promtool test, and
/// the unit file reloads.
@Suite struct OperatorFilesTests {
    static let admin = [("Authorization", "Bearer test-token"), ("Content-Type", "application/json")]

    /// The metric families a node with every part switched on writes: ClickHouse (unreachable, so
    /// the export is behind), a relay destination, and a 503 answered.
    static func exportedFamilies() throws -> Set<String> {
        let held = try HeldPort()
        let endpoint = try LiveEndpoint(sites: ["app.example", "news.example", "shop.example"]) { configuration in
            configuration.clickhouse = "http://127.0.0.1:\(held.port)/attribution"
            configuration.tokenKeyRotationDays = 90
        }
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: admin,
                                 body: Array(#"{"app_id":7,"name":"Puzzle","site":"app.example"}"#.utf8)).status == 201)
        #expect(endpoint.request("POST", "/api/relays", headers: admin, body: Array(
            #"{"name":"mmp","url":"http://127.0.0.1:\#(held.port)/copies","app_id":7,"protocols":["skadnetwork"],"internal":true}"#.utf8)).status == 201)
        // The relay service takes a new destination on a thread of its own: its first turn, a
        // refused connection, says it has.
        var metrics = try endpoint.get("/metrics")
        #expect(try endpoint.relayTurns.until {
            metrics = try endpoint.get("/metrics")
            return metrics.bodyText.contains("attribution_relay_state{destination=\"mmp\"")
        })
        #expect(metrics.status == 200)
        return Set(metrics.bodyText.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("# TYPE ") else { return nil }
            return line.split(separator: " ").dropFirst(2).first.map(String.init)
        })
    }

    /// Every `attribution_…` name in `text`.
    static func metricNames(in text: String) throws -> Set<String> {
        Set(text.matches(of: try Regex(#"\battribution_[a-z0-9_]+"#)).map { String(text[$0.range]) })
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: repositoryRoot + "/" + path, encoding: .utf8)
    }

    @Test func everyMetricTheAlertsAndTheDashboardNameIsExported() throws {
        let exported = try Self.exportedFamilies()
        #expect(exported.contains("attribution_http_responses_total") && exported.contains("attribution_relay_state")
                && exported.contains("attribution_export_lag_seconds"))
        for file in ["deploy/prometheus/alerts.yml", "deploy/prometheus/alerts.test.yml"] {
            let named = try Self.metricNames(in: Self.read(file))
            #expect(named.count >= 15, "\(file)")
            #expect(named.subtracting(exported).isEmpty, "\(file) names \(named.subtracting(exported).sorted()), which /metrics does not have")
        }
        let dashboard = try JSONSerialization.jsonObject(with: Data(Self.read("deploy/grafana/attribution-endpoint.json").utf8)) as! [String: Any]
        let panels = dashboard["panels"] as! [[String: Any]]
        #expect(panels.count >= 10)
        for panel in panels {
            for target in panel["targets"] as! [[String: Any]] {
                let expression = target["expr"] as! String
                let named = try Self.metricNames(in: expression)
                #expect(!named.isEmpty, "\(panel["title"]!): \(expression) names no metric of the endpoint")
                #expect(named.subtracting(exported).isEmpty, "\(panel["title"]!) names \(named.subtracting(exported).sorted())")
            }
        }
        // The renamed series' rules read only today's names.
        let renamed = try Self.read("deploy/prometheus/renamed-series.yml")
        let reads = try Regex(#"expr: ([^\n]+)"#)
        for match in renamed.matches(of: reads) {
            let named = try Self.metricNames(in: String(renamed[match.range]))
            #expect(named.subtracting(exported).isEmpty, "renamed-series.yml reads \(named.subtracting(exported).sorted())")
        }
    }

    /// Each alert has a runbook section where its `runbook_url` points, and a test that makes it fire.
    @Test func everyAlertHasARunbookSectionAndAPromtoolTest() throws {
        let alerts = try Self.read("deploy/prometheus/alerts.yml")
        let tests = try Self.read("deploy/prometheus/alerts.test.yml")
        let deployment = try Self.read("docs/DEPLOYMENT.md")
        let names = alerts.matches(of: try Regex(#"- alert: (\w+)"#)).map { String($0.output[1].substring!) }
        #expect(names.count >= 12)
        // GitHub's anchors: a heading in lower case, spaces as hyphens, punctuation gone.
        let anchors = Set(deployment.split(separator: "\n").filter { $0.hasPrefix("#") }.map { heading in
            String(heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                .filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }.replacingOccurrences(of: " ", with: "-"))
        })
        for name in names {
            #expect(alerts.contains("runbook_url: \"docs/DEPLOYMENT.md#\(name.lowercased())\""), "\(name) links no runbook")
            #expect(anchors.contains(name.lowercased()), "docs/DEPLOYMENT.md has no section \(name)")
            #expect(tests.contains("alertname: \(name)\n        exp_alerts:\n          - exp_labels"), "alerts.test.yml never makes \(name) fire")
        }
    }

    @Test func theUnitFileReloadsWithSIGHUP() throws {
        let unit = try Self.read("deploy/attribution-endpoint.service")
        #expect(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"))
    }
}
