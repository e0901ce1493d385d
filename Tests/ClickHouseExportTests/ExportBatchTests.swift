@testable import ClickHouseExport
import Primitives
import RecordLog
import Testing

/// Batches read from a real log: one table's kind only, within limits, the same rows every time
/// from the same offset, nothing skipped between one batch and the next.
@Suite struct ExportBatchTests {
    func lines(_ batch: ExportBatch) -> [[String: JSONValue]] {
        batch.body.split(separator: UInt8(ascii: "\n")).map { line in
            guard case .object(let members)? = try? JSONParser().parse(Array(line)) else { return [:] }
            return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
    }

    @Test func aTableTakesItsOwnKindWithTheEnvelopesIdAndTime() throws {
        let log = try ExportTestLog()
        defer { log.close() }
        log.reports(0..<3)
        log.trigger(data: 5)
        log.reports(3..<5)
        let end = log.store.durablePrefix.end
        let reports = ExportBatch.read(ExportTestLog.schema.tables[0], node: "node-a", from: 0, through: end, in: log.store)
        #expect(reports.rows == 5)
        #expect(reports.end == end)
        let rows = lines(reports)
        #expect(rows.map { $0["id"] } == (1...5).map { JSONValue.number(String($0)) })
        #expect(rows.allSatisfy { $0["node"] == .string("node-a") })
        #expect(rows[0]["received_at"] == .string("2026-11-20 10:00:01"))
        #expect(rows[0]["received_at_ms"] == .number("1795168801000"))
        #expect(rows[4]["source_id"] == .number("4"))
        #expect(rows[4]["role"] == .string("destination"))
        // Omitted: the secret token, even under `extra`. Unknown: under `extra`, as JSON text.
        #expect(rows.allSatisfy { $0["source_secret_token"] == nil })
        guard case .string(let extra)? = rows[2]["extra"] else { Issue.record("no extra"); return }
        #expect(extra.contains(#""note":"n2""#))
        #expect(!extra.contains("c2VjcmV0"))

        let triggers = ExportBatch.read(ExportTestLog.schema.tables[1], node: "node-a", from: 0, through: end, in: log.store)
        #expect(triggers.rows == 1)
        #expect(lines(triggers)[0]["trigger_data"] == .number("5"))
    }

    @Test func limitsCutABatchAndTheNextStartsWhereItEnded() throws {
        let log = try ExportTestLog()
        defer { log.close() }
        log.reports(0..<10)
        let end = log.store.durablePrefix.end
        let table = ExportTestLog.schema.tables[0]
        var offset = 0
        var ids: [JSONValue?] = []
        var batches = 0
        while offset < end {
            let batch = ExportBatch.read(table, node: "n", from: offset, through: end, in: log.store, limits: .init(rows: 3, bytes: 1 << 20))
            #expect(batch.rows <= 3)
            ids += lines(batch).map { $0["id"] }
            offset = batch.end
            batches += 1
        }
        #expect(batches == 4)
        #expect(ids == (1...10).map { JSONValue.number(String($0)) })
        // A byte limit stops after the row that crossed it: one row per batch, never none.
        let tiny = ExportBatch.read(table, node: "n", from: 0, through: end, in: log.store, limits: .init(rows: 100, bytes: 1))
        #expect(tiny.rows == 1)
    }

    @Test func theSameOffsetGivesTheSameBytes() throws {
        let log = try ExportTestLog()
        defer { log.close() }
        log.reports(0..<20)
        log.postback(transaction: "t-1")
        let end = log.store.durablePrefix.end
        for table in ExportTestLog.schema.tables {
            let first = ExportBatch.read(table, node: "n", from: 0, through: end, in: log.store)
            let again = ExportBatch.read(table, node: "n", from: 0, through: end, in: log.store)
            #expect(first.body == again.body)
            #expect(first.end == again.end)
        }
    }

    @Test func everyKindHasItsRowAndNoSecretLeavesTheNode() throws {
        let log = try ExportTestLog()
        defer { log.close() }
        log.postback(transaction: "t-1")
        log.retry(of: 1)
        log.appleAdsTokenAndCall()
        let end = log.store.durablePrefix.end
        let byName = Dictionary(uniqueKeysWithValues: ExportTestLog.schema.tables.map { ($0.name, $0) })
        let postbacks = lines(ExportBatch.read(byName["postbacks"]!, node: "n", from: 0, through: end, in: log.store))
        #expect(postbacks.count == 1)
        #expect(postbacks[0]["duplicate_key"] == .string("skadnetwork/t-1"))
        #expect(postbacks[0]["transaction-id"] == .string("t-1"))
        #expect(postbacks[0]["redownload"] == .number("0"))
        #expect(postbacks[0]["app-id"] == .number("6443210987"))
        #expect(postbacks[0]["duplicates_received"] == nil)
        let retries = lines(ExportBatch.read(byName["postback_retries"]!, node: "n", from: 0, through: end, in: log.store))
        #expect(retries.map { $0["retry_of"] } == [.number("1")])
        let tokens = ExportBatch.read(byName["apple_ads_tokens"]!, node: "n", from: 0, through: end, in: log.store)
        #expect(tokens.rows == 1)
        #expect(!String(decoding: tokens.body, as: UTF8.self).contains("SECRET-TOKEN"))
        let calls = lines(ExportBatch.read(byName["apple_ads_calls"]!, node: "n", from: 0, through: end, in: log.store))
        #expect(calls.first?["status"] == .string("attributed"))
        #expect(calls.first?["orgId"] == .number("40669820"))
        #expect(calls.first?["token_id"] == .number("1"))
    }

    @Test func aBatchCountsItsGroupsAndTheSameStartGivesTheSameBatchOrALargerOne() throws {
        let log = try ExportTestLog()
        defer { log.close() }
        log.reports(0..<40)
        let table = ExportTestLog.schema.tables[0]
        let first = ExportBatch.read(table, node: "n", from: 0, through: log.store.durablePrefix.end, in: log.store)
        func counts(_ batch: ExportBatch) -> [String: Int] {
            var out: [String: Int] = [:]
            for line in lines(ExportBatch(table: "", body: batch.rollupBody, end: 0)) {
                #expect(line["batch_first_id"] == .number("1"))
                guard case .string(let role)? = line["role"], case .number(let data)? = line["trigger_data"],
                      case .number(let n)? = line["records"] else { continue }
                out["\(role)/\(data)"] = Int(n)
            }
            return out
        }
        let before = counts(first)
        #expect(before.count == 16)
        #expect(before.values.reduce(0, +) == 40)
        #expect(before["destination/0"] == 3)
        #expect(lines(ExportBatch(table: "", body: first.rollupBody, end: 0)).allSatisfy { $0["batch_last_id"] == .number("40") })
        // Sent again after a crash, once the log has grown: the same first record, every group at least as large.
        log.reports(40..<50)
        let again = ExportBatch.read(table, node: "n", from: 0, through: log.store.durablePrefix.end, in: log.store)
        let after = counts(again)
        #expect(after.values.reduce(0, +) == 50)
        #expect(before.allSatisfy { after[$0.key, default: 0] >= $0.value })
        // Cut by a limit, the same records each time, and so the same bytes.
        let cut = ExportBatch.read(table, node: "n", from: 0, through: log.store.durablePrefix.end, in: log.store, limits: .init(rows: 7, bytes: 1 << 20))
        let cutAgain = ExportBatch.read(table, node: "n", from: 0, through: log.store.durablePrefix.end, in: log.store, limits: .init(rows: 7, bytes: 1 << 20))
        #expect(cut.rollupBody == cutAgain.rollupBody && !cut.rollupBody.isEmpty)
    }

    @Test func aRollupsSortingKeyHoldsNoNullableColumn() {
        let rollup = ExportTestLog.schema.tables[0].rollup!
        let ddl = rollup.createStatement(database: "db")
        #expect(ddl.contains("ENGINE = ReplacingMergeTree(batch_last_id)"))
        #expect(ddl.contains("ORDER BY (`node`, `batch_first_id`, `role`, `trigger_data`)"))
        #expect(!rollup.keys.contains { if case .nullable = $0.type { true } else { false } })
    }

    @Test func aValueThatFitsNoColumnIsKeptUnderExtraAndTheColumnLeftOut() throws {
        let table = ClickHouseTable(name: "t", codec: ReportExportCodecStandIn(), columns: [.init("small", .uint8), .init("maybe", .nullable(.uint8))])
        var writer = RowWriter(table: table, node: "n")
        var out: [UInt8] = []
        writer.write(ExportRow(members: [JSONMember(key: "small", value: .number("300")), JSONMember(key: "maybe", value: .null),
                                         JSONMember(key: "id", value: .number("999"))], cells: []),
                     id: 7, time: Timestamp(millisecondsSinceEpoch: 0), into: &out)
        #expect(String(decoding: out, as: UTF8.self)
                == #"{"node":"n","id":7,"received_at":"1970-01-01 00:00:00","received_at_ms":0,"maybe":null,"extra":"{\"small\":300}"}"# + "\n")
    }
}

/// A codec for rows written by hand.
struct ReportExportCodecStandIn: RecordCodec {
    let kind = RecordKind(200, name: "test")
    let columns: [String] = []
    func reader() -> (RecordLog.RecordView) -> ExportRow? { { _ in nil } }
}
