import Foundation
import Testing
import RawHTTPClient
@testable import Endpoint

@Suite struct ExportAndAdminTests {
    @Test func exportNeedsTheBearerToken() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for path in ["/api/reports", "/api/rejections", "/metrics"] {
            let missing = try endpoint.get(path, token: nil)
            #expect(missing.status == 401, "\(path)")
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            #expect(try endpoint.get(path, token: "wrong-token").status == 401)
            #expect(try endpoint.get(path, token: "test-token").status == 200)
        }
    }

    @Test func tokenIsGeneratedOnFirstStartAndKeptPrivate() throws {
        let directory = temporaryDirectory()
        let first = try LiveEndpoint(token: nil, directory: directory)
        let path = directory + "/admin-token"
        let token = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64)
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(try first.get("/api/reports", token: token).status == 200)
        first.stop()
        // The same token on the next start.
        let second = try LiveEndpoint(token: nil, directory: directory)
        defer { second.stop() }
        #expect(try second.get("/api/reports", token: token).status == 200)
    }

    @Test func sinceAndUntilFilterByReceiveTime() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for (i, time) in ["2026-11-20T09:00:00Z", "2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z"].enumerated() {
            endpoint.clock.set(time)
            #expect(try endpoint.post(reportBody(sourceID: i)).status == 201)
        }
        #expect(try endpoint.export("?since=2026-11-20T10:00:00Z").map { $0["source_id"] as? Int } == [1, 2])
        #expect(try endpoint.export("?until=2026-11-20T10:00:00Z").map { $0["source_id"] as? Int } == [0])
        #expect(try endpoint.export("?since=2026-11-20T09:30:00Z&until=2026-11-20T10:30:00%2B00:00").map { $0["source_id"] as? Int } == [1])
        let bad = try endpoint.get("/api/reports?since=yesterday")
        #expect(bad.status == 400)
        #expect(json(bad)["field"] as? String == "since")
        #expect(try endpoint.get("/api/reports?sinse=2026-11-20T10:00:00Z").status == 400)
    }

    /// The page's period (`from`/`to`, UTC days with both ends included) copied into an export URL
    /// means what it means on the summary: the export holds exactly the summary's reports.
    @Test func fromAndToMeanTheSummarysDaysOnEveryExport() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for (i, time) in ["2026-11-19T23:59:59.999Z", "2026-11-20T00:00:00Z", "2026-11-21T23:59:59.999Z", "2026-11-22T00:00:00Z"].enumerated() {
            endpoint.clock.set(time)
            #expect(try endpoint.post(reportBody(sourceID: i)).status == 201)
        }
        #expect(try endpoint.export("?from=2026-11-20&to=2026-11-21").map { $0["source_id"] as? Int } == [1, 2])
        #expect(try endpoint.export("?from=2026-11-22").map { $0["source_id"] as? Int } == [3])
        #expect(try endpoint.export("?to=2026-11-19").map { $0["source_id"] as? Int } == [0])
        let summary = json(try endpoint.get("/api/summary?from=2026-11-20&to=2026-11-21"))
        let counted = ["accepted", "quarantined"].map { (summary[$0] as? [String: Int] ?? [:]).values.reduce(0, +) }.reduce(0, +)
        #expect(counted == 2)
        for path in ["/api/reports.csv", "/api/postbacks", "/api/apple-ads.csv"] {
            #expect(try endpoint.get(path + "?from=2026-11-20&to=2026-11-21").status == 200, "\(path)")
        }
        let refusals: [(String, String, String)] = [
            ("?from=2026-11-20&until=2026-11-21T00:00:00Z", "conflicting_period", "since"),
            ("?since=2026-11-20T00:00:00Z&to=2026-11-21", "conflicting_period", "since"),
            ("?from=2026-11-21&to=2026-11-20", "invalid_period", "to"),
            ("?since=2026-11-21T00:00:00Z&until=2026-11-20T00:00:00Z", "invalid_period", "until"),
            ("?from=2026-11-31", "invalid_date", "from"),
            ("?from=20261120", "invalid_date", "from"),
            ("?to=2026-11-20T00:00:00Z", "invalid_date", "to"),
        ]
        for (query, rule, field) in refusals {
            let response = try endpoint.get("/api/reports" + query)
            #expect(response.status == 400 && json(response)["rule"] as? String == rule && json(response)["field"] as? String == field, "\(query): \(response.bodyText)")
        }
    }

    @Test func exportStreamsLargeResults() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let client = try RawHTTPClient(port: endpoint.port)
        // 500 reports over one keep-alive connection, pipelined in batches of 50.
        for batch in 0..<10 {
            var text = ""
            for i in 0..<50 {
                let body = reportBody(sourceID: (batch * 50 + i) % 256, extra: ",\"n\":\(batch * 50 + i)")
                text += "POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: news.example\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            try client.send(text)
            for _ in 0..<50 { #expect(try client.readResponse().status == 201) }
        }
        let response = try endpoint.get("/api/reports")
        #expect(response.header("Content-Type") == "application/x-ndjson")
        let numbers = response.bodyText.split(separator: "\n").compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["extra"] as? [String: Any]
        }.compactMap { $0["n"] as? Int }
        #expect(numbers == Array(0..<500), "every report once, in the order received")
    }

    @Test func healthAndMetrics() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        // Without a token, the status and no more: a load balancer needs only the code.
        let health = try httpRequest(port: endpoint.port, method: "GET", path: "/healthz")
        #expect(health.status == 200)
        #expect(json(health).keys.sorted() == ["status"] && json(health)["status"] as? String == "ok")
        // With it, the node's name (by default this machine's host name), as in the metrics.
        let detailed = try endpoint.get("/healthz")
        #expect(json(detailed)["node"] as? String == EndpointConfiguration.hostName())
        #expect(json(detailed)["reports"] as? Int == 0)
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_node_info{node=\"\(EndpointConfiguration.hostName())\"} 1\n"))
        let head = try httpRequest(port: endpoint.port, method: "HEAD", path: "/healthz")
        #expect(head.status == 200 && head.body.isEmpty)
        _ = try endpoint.post(reportBody())
        _ = try endpoint.post(reportBody(sourceID: 300))
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains(#"attribution_reports_stored_total{protocol="pcm",role="source",verdict="accepted"} 1"#))
        #expect(metrics.contains(#"attribution_requests_rejected_total{rule="out_of_range"} 1"#))
        #expect(metrics.contains("attribution_store_reports 1"))
        // The data directory's file system, as statvfs sees it from here: an alert's "disk filling up".
        func value(_ name: String) -> Int? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        let (available, size) = (try #require(value("attribution_data_filesystem_avail_bytes")), try #require(value("attribution_data_filesystem_size_bytes")))
        var fs = statvfs()
        #expect(statvfs(endpoint.directory, &fs) == 0)
        #expect(size == Int(fs.f_blocks) * Int(fs.f_frsize) && available > 0 && available <= size)
        // Free space moves with other writers on the disk: within 1 % of what statvfs says now.
        #expect(abs(available - Int(fs.f_bavail) * Int(fs.f_frsize)) <= size / 100)
    }

    @Test func reportsSurviveARestart() throws {
        let directory = temporaryDirectory()
        let first = try LiveEndpoint(directory: directory)
        for i in 0..<3 { #expect(try first.post(reportBody(sourceID: i)).status == 201) }
        first.stop()
        let second = try LiveEndpoint(directory: directory)
        defer { second.stop() }
        #expect(try second.post(reportBody(sourceID: 3)).status == 201)
        let lines = try second.export()
        #expect(lines.map { $0["id"] as? Int } == [1, 2, 3, 4])
        #expect(lines.map { $0["source_id"] as? Int } == [0, 1, 2, 3])
    }
}
