import Foundation
import Testing
@testable import Endpoint

/// What the endpoint makes of `--clickhouse`: the option and its credentials, `/healthz` and
/// `/metrics` while ClickHouse cannot be reached, and `scope=` on the summary APIs. The export
/// against a real ClickHouse is scripts/clickhouse_export_test.py's.
@Suite struct ClickHouseEndpointTests {
    static let summaries = ["/api/summary", "/api/summary.csv", "/api/apps/summary", "/api/apple-ads/summary"]

    /// A port nothing listens on, for the rest of the run: connections are refused at once, and
    /// no other test is given it.
    static func closedPort() -> Int {
        guard let held = try? HeldPort() else { return 9 }
        return Int(held.port)
    }

    @Test func theServerIsOneURLAndCredentialsNeverComeFromTheCommandLine() throws {
        guard case .run(let c) = try EndpointConfiguration.parse(arguments: ["--dev", "--clickhouse", "http://10.0.0.5:8123/attribution"],
                                                                 environment: ["CLICKHOUSE_USER": "writer", "CLICKHOUSE_PASSWORD": "s3cret"]) else {
            Issue.record("expected a configuration")
            return
        }
        let target = try #require(try c.resolvedClickHouse())
        #expect(target.credentials?.user == "writer")
        #expect(target.description == "http://10.0.0.5:8123/attribution")
        #expect(!target.description.contains("s3cret"))
        for bad in ["http://writer:s3cret@10.0.0.5:8123/attribution", "http://10.0.0.5:8123/", "http://10.0.0.5:8123/db?password=x",
                    "10.0.0.5:8123", "http://10.0.0.5:8123/db name", "http://10.0.0.5:8123/" + String(repeating: "d", count: 1000)] {
            #expect(throws: EndpointConfiguration.ParseError.self, "\(bad)") {
                try EndpointConfiguration.parse(arguments: ["--dev", "--clickhouse", bad], environment: [:])
            }
        }
        #expect(throws: EndpointConfiguration.ParseError.self) {
            try EndpointConfiguration.parse(arguments: ["--dev", "--clickhouse", "http://h:1/db", "--clickhouse-credentials", "/nonexistent"],
                                            environment: [:])
        }
    }

    /// The cluster's page names a node whose export turns stopped: its numbers since are missing.
    @Test func aNodeSilentForFiveMinutesIsNamedStale() throws {
        let text = ClusterNodes.json(rows: [["node-1", "1795168800", "12"], ["node-2", "1795168500", "300"], ["node-3", "x", "1"], ["short"]])
        let nodes = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        #expect(nodes.map { $0["node"] as? String } == ["node-1", "node-2"])
        #expect(nodes.map { $0["stale"] as? Bool } == [false, true])
        #expect(nodes[0]["last_export"] as? String == "2026-11-20T10:00:00.000Z")
        #expect(nodes[1]["seconds_since"] as? Int == 300)
        #expect(ClusterNodes.json(rows: []) == "[]")
        // Names come from ClickHouse: written as JSON strings whatever they hold.
        let odd = ClusterNodes.json(rows: [["n\"1\\", "0", "5"]])
        #expect((try JSONSerialization.jsonObject(with: Data(odd.utf8)) as? [[String: Any]])?.first?["node"] as? String == "n\"1\\")
        #expect(ClusterNodes.sql(database: "attribution").contains("FROM attribution.node_exports"))
    }

    @Test func whileClickHouseCannotBeReachedTheNodeIsHealthyAndSaysTheExportIsBehind() throws {
        let endpoint = try LiveEndpoint { $0.clickhouse = "http://127.0.0.1:\(Self.closedPort())/attribution" }
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        var health: [String: Any] = [:]
        // The exporter's thread first tries within a fraction of a second; each failed turn signals.
        #expect(try endpoint.exportTurns.until {
            health = json(try endpoint.get("/healthz"))
            return (health["export"] as? [String: Any])?["last_error"] != nil
        })
        let export = try #require(health["export"] as? [String: Any])
        #expect(health["status"] as? String == "ok")
        #expect(export["state"] as? String == "behind")
        #expect(export["lag_records"] as? Int == 1)
        #expect((export["clickhouse"] as? String)?.hasSuffix("/attribution") == true)
        // A stranger is told the status alone: not ClickHouse's address, not its last error
        // (which can quote a row), not the counts; a scoped viewer neither.
        let stranger = try endpoint.get("/healthz", token: nil)
        #expect(stranger.status == 200 && json(stranger).keys.sorted() == ["status"])
        #expect(!stranger.bodyText.contains("127.0.0.1") && !stranger.bodyText.contains("export"))
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains("attribution_export_lag_records{table=\"pcm_reports\"} 1"))
        #expect(metrics.contains("attribution_export_last_error_info{error=\""))
        #expect(metrics.contains("attribution_export_paused{table=\"postbacks\"} 0"))
        // The cluster's numbers need ClickHouse: a 503 that says so, the node's own still there.
        for path in Self.summaries {
            let cluster = try endpoint.get(path + "?scope=cluster")
            #expect(cluster.status == 503, "\(path)")
            #expect(json(cluster)["rule"] as? String == "cluster_summary_unavailable", "\(path)")
            #expect(try endpoint.get(path + "?scope=node").status == 200, "\(path)")
        }
        #expect(json(try endpoint.get("/api/summary"))["cluster_available"] as? Bool == true)
    }

    @Test func aNodeWithoutClickHouseHasOnlyItsOwnNumbersAndSaysSo() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(json(try endpoint.get("/healthz"))["export"] == nil)
        #expect(!(try endpoint.get("/metrics").bodyText.contains("attribution_export_")))
        for path in Self.summaries {
            #expect(json(try endpoint.get(path + "?scope=cluster"))["rule"] as? String == "cluster_scope_unavailable", "\(path)")
            #expect(try endpoint.get(path + "?scope=cluster").status == 409)
            for bad in ["everything", "CLUSTER", "node%00", "%FF"] {
                let response = try endpoint.get(path + "?scope=" + bad)
                #expect(response.status == 400 && json(response)["field"] as? String == "scope", "\(path) \(bad)")
            }
        }
        let own = json(try endpoint.get("/api/apps/summary"))
        #expect(own["scope"] as? String == "node")
        #expect(own["cluster_available"] as? Bool == false)
    }
}
