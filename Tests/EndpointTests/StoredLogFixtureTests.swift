import Foundation
import Testing
@testable import Endpoint

/// Logs are permanent: what an earlier release wrote must replay to the same export.
@Suite struct StoredLogFixtureTests {
    @Test func theLogOf2026_11_23ReplaysToTheSameExport() throws {
        let fixture = try #require(Bundle.module.url(forResource: "log-2026-11-23", withExtension: nil))
        let directory = temporaryDirectory()
        for file in ["reports.log", "registry.json"] {
            try FileManager.default.copyItem(at: fixture.appendingPathComponent(file), to: URL(fileURLWithPath: directory + "/" + file))
        }
        let expected = try String(contentsOf: fixture.appendingPathComponent("export.ndjson"), encoding: .utf8)
        let endpoint = try LiveEndpoint(directory: directory) { $0.logPreallocationMB = 0 }
        defer { endpoint.stop() }
        #expect(endpoint.server.store.replay.corruptRecords.isEmpty && endpoint.server.store.replay.tornTailBytes == 0)
        let export = try endpoint.get("/api/reports").bodyText
        #expect(export == expected)
        #expect(expected.split(separator: "\n").count == 5)
        // The replayed ledger knows both triggers: the first was used by the first report.
        endpoint.server.waitUntilSummaryIsReady()
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains("attribution_store_reports 5\n"))
    }

    /// Every kind of record, and every export of them, in both formats.
    @Test func theLogOf2026_11_25ReplaysToTheSameExportsOfEveryKind() throws {
        let fixture = try #require(Bundle.module.url(forResource: "log-2026-11-25", withExtension: nil))
        let directory = temporaryDirectory()
        for file in ["reports.log", "registry.json", "apps.json"] {
            try FileManager.default.copyItem(at: fixture.appendingPathComponent(file), to: URL(fileURLWithPath: directory + "/" + file))
        }
        // A clock before every record, and an Apple that cannot be reached: no call is due and
        // no token expires, so nothing is added to the log while it is exported.
        let endpoint = try LiveEndpoint(sites: ["news.example", "app.example", "shop.example"], directory: directory) { configuration in
            configuration.logPreallocationMB = 0
            configuration.manualClock = true
            configuration.appleAdsAPI = "http://127.0.0.1:9/"
        }
        endpoint.clock.set("2026-11-01T00:00:00Z")
        defer { endpoint.stop() }
        #expect(endpoint.server.store.replay.corruptRecords.isEmpty && endpoint.server.store.replay.tornTailBytes == 0)
        #expect(endpoint.server.store.replay.records == 1099)
        for (path, file) in [("/api/reports", "reports.ndjson"), ("/api/reports.csv", "reports.csv"),
                             ("/api/postbacks", "postbacks.ndjson"), ("/api/postbacks.csv", "postbacks.csv"),
                             ("/api/apple-ads", "apple-ads.ndjson"), ("/api/apple-ads.csv", "apple-ads.csv")] {
            let expected = try Data(contentsOf: fixture.appendingPathComponent(file))
            let export = try endpoint.get(path)
            #expect(export.status == 200, "\(path)")
            #expect(Data(export.body) == expected, "\(path) differs from \(file)")
        }
    }
}
