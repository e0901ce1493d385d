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
}
