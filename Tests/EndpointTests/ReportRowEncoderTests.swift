import ClickHouseExport
import Foundation
import PCM
import PCMRecords
import Primitives
import RecordLog
import Testing
@testable import Endpoint

/// The fast writer of `pcm_reports` rows gives, record by record, the bytes the codec's rows give
/// through the table's columns, and the same counts: on the recorded logs, and on reports of
/// every shape it must hand back to the codec.
@Suite struct ReportRowEncoderTests {
    static let table = ClickHouseTables.schema.tables.first { $0.name == "pcm_reports" }!

    func compare(_ store: RecordLog, expectEncoded: Bool = true) {
        let end = store.durablePrefix.end
        for limits in [ExportBatch.Limits.standard, .init(rows: 3, bytes: 1 << 20)] {
            var offset = 0
            while offset < end {
                let fast = ExportBatch.read(Self.table, node: "node-a", from: offset, through: end, in: store, limits: limits)
                let slow = ExportBatch.read(Self.table, node: "node-a", from: offset, through: end, in: store, limits: limits, encoding: false)
                let sameRows = fast.body == slow.body, sameCounts = fast.rollupBody == slow.rollupBody
                #expect(sameRows)
                #expect(sameCounts)
                #expect(fast.rows == slow.rows && fast.end == slow.end)
                if fast.body != slow.body {
                    let a = String(decoding: fast.body, as: UTF8.self).split(separator: "\n"), b = String(decoding: slow.body, as: UTF8.self).split(separator: "\n")
                    if let i = a.indices.first(where: { $0 >= b.count || a[$0] != b[$0] }) { Issue.record("fast: \(a[i])\ncodec: \(i < b.count ? b[i] : "")") }
                    return
                }
                offset = fast.end
            }
        }
    }

    @Test(arguments: ["log-2026-11-23", "log-2026-11-25"])
    func theRecordedLogsGiveTheSameRowsAndCounts(_ name: String) throws {
        let fixture = try #require(Bundle.module.url(forResource: name, withExtension: nil))
        let directory = temporaryDirectory()
        try FileManager.default.copyItem(atPath: fixture.path + "/reports.log", toPath: directory + "/reports.log")
        let store = try RecordLog(directory: directory)
        defer { store.close() }
        compare(store)
    }

    @Test func bodiesOfEveryShapeGiveTheSameRowsWhicheverWritesThem() throws {
        let store = try RecordLog(directory: temporaryDirectory())
        defer { store.close() }
        let bodies = [
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}"#,
            #" { "version" : 3 , "trigger_data":15,"attributed_on_site":"shop.example","source_id":0,"source_site":"news.example","source_engagement_type":"click" } "#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":255,"attributed_on_site":"xn--bcher-kva.example","trigger_data":0,"version":2}"#,
            // The same group as the codec's "note" body below: one row of counts, not two.
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            // Left to the codec: a token, an unknown key, a dash key, an escape, a large or odd number,
            // a missing field, a key twice, bytes past ASCII, what is no object.
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3,"source_secret_token":"dG9r","source_secret_token_signature":"c2ln"}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3,"note":"x"}"#,
            #"{"source-engagement-type":"click","source-site":"news.example","source-id":1,"attributed-on-site":"shop.example","trigger-data":1,"report-version":1}"#,
            #"{"source_engagement_type":"cl\u0069ck","source_site":"news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1000,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":007,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1.5,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1}"#,
            #"{"source_engagement_type":"click","source_site":"news.example","source_id":1,"source_id":2,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            #"{"source_engagement_type":"click","source_site":"bücher.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
            "{\"source_engagement_type\":\"click\",\"source_site\":\"n\u{FF}ws.example\",\"source_id\":1,\"attributed_on_site\":\"shop.example\",\"trigger_data\":1,\"version\":3}",
            #"[1,2]"#, "", #"{"#,
            // WebKit's shape, with a row longer than the fast writer's memory.
            #"{"source_engagement_type":"click","source_site":"\#(String(repeating: "n", count: 20_000)).example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#,
        ]
        let campaigns: [String?] = [nil, "Winter \"sale\"\n", "Ünïcode ✓", "back\\slash"]
        // A trigger days before the report, and one after it (a clock set back): a negative delay.
        let before = Timestamp(rfc3339: "2026-11-19T10:00:00Z")!, after = Timestamp(rfc3339: "2100-01-01T00:00:00Z")!
        for (i, body) in bodies.enumerated() {
            for (j, campaign) in campaigns.enumerated() {
                // Quarantined with reasons and with none; accepted with reasons and with none.
                let draft = StoredReport.Draft(role: (i + j) % 2 == 0 ? .destination : .source, verdict: j == 1 || j == 3 ? .quarantined : .accepted,
                                               reasons: j == 1 ? ["no_matching_trigger", "late"] : j == 2 ? ["late", "source_token_verified"] : [],
                                               body: Array(body.utf8), triggerID: j == 3 ? 9 : nil, campaign: campaign,
                                               triggerRecordedAt: j == 2 ? before : j == 3 ? after : nil)
                let done = DispatchSemaphore(value: 0)
                store.append(draft, completion: { (_: Result<StoredReport, StoreError>) in done.signal() })
                done.wait()
            }
        }
        compare(store)
        // The WebKit shape is the fast writer's: it must take it, or the test compares the codec with itself.
        var encoder = ReportRowEncoder()
        var out: [UInt8] = [], key: [UInt8] = []
        var taken = 0
        store.scanRecords(of: .report, through: store.durablePrefix.end) { view in
            if encoder.encode(view, prefix: [], into: &out, key: &key) { taken += 1 }
            return true
        }
        #expect(taken == 4 * campaigns.count)
    }
}
