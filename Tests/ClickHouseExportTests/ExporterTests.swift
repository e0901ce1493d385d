@testable import ClickHouseExport
import DurableFiles
import Foundation
import Locking
import LogConsumer
import Primitives
import Testing

/// The exporter's thread against a stand-in ClickHouse: everything arrives once, a failing
/// server is retried without loss, a refused table stops alone, the cursor survives a restart.
@Suite(.serialized) struct ExporterTests {
    final class Events: Sendable {
        let lines = Locked<[(String, [(String, JSONValue)])]>([])
        var announce: @Sendable (String, [(String, JSONValue)]) -> Void { { event, fields in self.lines.withLock { $0.append((event, fields)) } } }
        func count(_ name: String) -> Int { lines.withLock { $0.filter { $0.0 == name }.count } }
    }

    func exporter(_ log: ExportTestLog, _ standIn: ClickHouseStandIn, node: String = "node-a", events: Events = Events(),
                  limits: ExportBatch.Limits = .standard, turns: Turns) throws -> ClickHouseExporter {
        let target = try ClickHouseTarget(standIn.url, credentials: nil)
        return ClickHouseExporter(store: log.store, schema: ExportTestLog.schema, client: ClickHouseClient(target: target, timeout: 5),
                                  node: node, dataDirectory: log.directory, clock: { EndpointTestClock.now() }, limits: limits,
                                  interval: 0.01, retry: RetrySchedule(first: 0.01, longest: 0.05), announce: events.announce,
                                  observer: turns.observe)
    }

    func writeEveryKind(_ log: ExportTestLog) {
        log.reports(0..<25)
        log.trigger(data: 3)
        log.postback(transaction: "t-1")
        log.retry(of: 1)
        log.retry(of: 1)
        log.appleAdsTokenAndCall()
    }

    @Test func everyRecordOfEveryKindArrivesAndTheLagFallsToZero() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        writeEveryKind(log)
        let exporter = try exporter(log, standIn, limits: .init(rows: 10, bytes: 1 << 20), turns: turns)
        exporter.start()
        #expect(turns.until { exporter.status.lagRecords == 0 && exporter.status.schemaReady })
        // Records written while it runs follow.
        log.reports(25..<30)
        // Both the reports and their counts: the cursor moves once the second is accepted.
        #expect(turns.until { standIn.distinctRows("pcm_reports") == 30 && exporter.status.lagRecords == 0 })
        exporter.stop()
        let expected = ["pcm_reports": 30, "pcm_triggers": 1, "postbacks": 1, "postback_retries": 2, "apple_ads_tokens": 1, "apple_ads_calls": 1]
        for (table, count) in expected {
            #expect(standIn.distinctRows(table) == count, "\(table)")
            #expect(standIn.rows(table).count == count, "\(table) sent once each")
        }
        let status = exporter.status
        #expect(status.tables.first { $0.table == "pcm_reports" }?.exportedRows == 30)
        #expect(status.lagRecords == 0 && !status.isBehind)
        // The schema was created before the first insert.
        let statements = standIn.state.withLock { $0.statements }
        #expect(statements.first == "CREATE DATABASE IF NOT EXISTS attribution")
    }

    @Test func aServerThatFailsIsRetriedAndNothingIsLostOrDoubled() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        writeEveryKind(log)
        standIn.set("pcm_reports", .fail(times: 4, status: 503, body: "Service Unavailable"))
        let events = Events()
        let exporter = try exporter(log, standIn, events: events, turns: turns)
        exporter.start()
        #expect(turns.until { exporter.status.lagRecords == 0 })
        exporter.stop()
        #expect(standIn.rows("pcm_reports").count == 25)
        let status = exporter.status
        #expect(status.failures >= 4)
        #expect(status.failuresInARow == 0)
        #expect(status.lastError?.contains("HTTP 503") == true)
        // The first failure of a run is logged, and the recovery.
        #expect(events.count("export_failed") == 1)
        #expect(events.count("export_resumed") == 1)
    }

    @Test func aRefusedTableStopsAloneAndKeepsItsRecords() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        writeEveryKind(log)
        standIn.set("postbacks", .refuse(body: "Code: 16, e.displayText() = DB::Exception: No such column transaction-id"))
        let events = Events()
        let exporter = try exporter(log, standIn, events: events, turns: turns)
        exporter.start()
        #expect(turns.until { exporter.status.tables.filter { $0.table != "postbacks" }.allSatisfy { $0.lagRecords == 0 } })
        #expect(turns.until { exporter.status.tables.first { $0.table == "postbacks" }?.paused != nil })
        log.reports(25..<27)
        #expect(turns.until { standIn.distinctRows("pcm_reports") == 27 && exporter.status.tables.first { $0.table == "pcm_reports" }?.lagRecords == 0 })
        exporter.stop()
        let postbacks = exporter.status.tables.first { $0.table == "postbacks" }
        #expect(postbacks?.paused?.contains("No such column") == true)
        #expect(postbacks?.lagRecords == 1)
        #expect(exporter.status.isBehind)
        #expect(standIn.rows("postbacks").isEmpty)
        #expect(events.count("export_paused") == 1)
    }

    @Test func aRestartGoesOnFromTheCursorAndAnotherNodeNameIsRefused() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        log.reports(0..<12)
        let first = try exporter(log, standIn, turns: turns)
        first.start()
        #expect(turns.until { first.status.lagRecords == 0 })
        first.stop()
        log.reports(12..<15)
        let second = try exporter(log, standIn, turns: turns)
        second.start()
        #expect(turns.until { second.status.lagRecords == 0 })
        second.stop()
        // Only the new reports were sent again.
        #expect(standIn.rows("pcm_reports").count == 15)
        // Each run asked whether counts from its first batch on were there; none were, so nothing was deleted.
        let (asked, deletes) = standIn.state.withLock { s in
            (s.statements.filter { $0.hasPrefix("SELECT count() FROM attribution.pcm_report_counts WHERE node = 'node-a'") }.count,
             s.statements.filter { $0.hasPrefix("ALTER TABLE attribution.pcm_report_counts DELETE") }.count)
        }
        #expect(asked == 2)
        #expect(deletes == 0)
        #expect(Set(standIn.rows("pcm_report_counts").map(\.id)) == [1, 13])
        #expect(second.status.tables.first { $0.table == "pcm_reports" }?.exportedRows == 15)

        let events = Events()
        let renamed = try exporter(log, standIn, node: "node-b", events: events, turns: turns)
        renamed.start()
        #expect(renamed.status.stopped?.contains("node-a") == true)
        #expect(renamed.status.isBehind)
        #expect(events.count("export_stopped") == 1)
        renamed.stop()
    }

    @Test func aCursorLostAfterClickHousesAnswerSendsAgainAndFinalCountsOnce() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        log.reports(0..<8)
        let first = try exporter(log, standIn, turns: turns)
        first.start()
        #expect(turns.until { first.status.lagRecords == 0 })
        first.stop()
        // The window the issue names: ClickHouse has the rows, the cursor never reached disk.
        try FileManager.default.removeItem(atPath: log.directory + "/" + ClickHouseExporter.cursorFile)
        let second = try exporter(log, standIn, turns: turns)
        second.start()
        #expect(turns.until { second.status.lagRecords == 0 })
        second.stop()
        #expect(standIn.rows("pcm_reports").count == 16)
        #expect(standIn.distinctRows("pcm_reports") == 8)
        // The counts sent before the cursor was lost are deleted before the first batch is counted again.
        let deletes = standIn.state.withLock { $0.statements.filter { $0.hasPrefix("ALTER TABLE attribution.pcm_report_counts DELETE WHERE node = 'node-a' AND batch_first_id >= 1") } }
        #expect(deletes.count == 1)
    }

    @Test func aNewerSchemaInClickHouseStopsEveryTable() throws {
        let turns = Turns()
        let log = try ExportTestLog()
        let standIn = try ClickHouseStandIn.start()
        defer { standIn.stop(); log.close() }
        log.reports(0..<2)
        standIn.state.withLock { $0.schemaVersion = "\(ClickHouseSchema.version + 1)" }
        let exporter = try exporter(log, standIn, turns: turns)
        exporter.start()
        #expect(turns.until { exporter.status.tables.allSatisfy { $0.paused?.contains("newer") == true } })
        exporter.stop()
        #expect(standIn.rows("pcm_reports").isEmpty)
    }
}

enum EndpointTestClock {
    static func now() -> Timestamp { Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000)) }
}
