import Dispatch
import DurableFiles
import Foundation
import Locking
import LogConsumer
import Primitives
import RecordLog

/// Sends every record of the log to ClickHouse, table by table, from a durable cursor: a
/// `LogConsumer`, run by its `LogFollower` on the `clickhouse-export` thread. The endpoint never
/// waits for it: the log is the buffer while ClickHouse is down or slow, and the export catches up
/// when it returns.
///
/// Each turn takes, for each table, the records after its cursor up to the log's durable end (at
/// most `limits`), sends them as one `INSERT … FORMAT JSONEachRow`, and on ClickHouse's 200 moves
/// the cursor and saves it. What goes wrong:
/// - no answer, a time-out, a server error: wait (`RetrySchedule`) and send the same batch again;
/// - a missing table: create the schema, then send again;
/// - ClickHouse refuses the rows (a schema changed by hand, a value it cannot read): that table
///   stops, with the reason in the log, `/metrics` and `/healthz`, until the endpoint restarts.
///   Its records stay in the log; the other tables go on.
public final class ClickHouseExporter: Sendable {
    public struct TableStatus: Sendable {
        public var table: String
        public var kind: RecordKind
        public var exportedRows: Int
        public var unreadable: Int
        /// Records of the kind in the log not yet in ClickHouse.
        public var lagRecords: Int
        /// How old the oldest of them is, as of the exporter's last look (it looks every `interval`).
        public var lagSeconds: Double
        /// Why the table's export stopped, if it did.
        public var paused: String?
    }

    public struct Status: Sendable {
        public var target: String
        public var schemaReady: Bool
        public var tables: [TableStatus]
        public var lastError: String?
        public var lastErrorAt: Timestamp?
        public var failuresInARow: Int
        public var failures: Int
        public var batches: Int
        /// Set when the exporter cannot run at all (a cursor written by another node).
        public var stopped: String?

        public var lagRecords: Int { tables.reduce(0) { $0 + $1.lagRecords } }
        public var lagSeconds: Double { tables.map(\.lagSeconds).max() ?? 0 }
        public var isBehind: Bool { lagRecords > 0 || stopped != nil || tables.contains { $0.paused != nil } }
    }

    private struct State: Sendable {
        var cursor: LogCursor
        var schemaReady = false
        var paused: [String: String] = [:]
        var lag: [String: StreamLag] = [:]
        var stopped: String?
        /// Rollups whose earlier counts from this run's first batch on were deleted.
        var preparedRollups: Set<String> = []
        /// When the last `node_exports` row was written, in the monotonic clock's nanoseconds.
        var lastHeartbeat: UInt64?
        /// After a restore: by table, the highest id ClickHouse holds from this node's life before
        /// it (`askSentBeforeRestore`); nil until asked.
        var sentBeforeRestore: [String: UInt64]?
    }

    private let store: RecordLog
    private let schema: ClickHouseSchema
    private let client: ClickHouseClient
    private let node: String
    private let file: DurableJSONFile<LogCursor?>
    private let clock: @Sendable () -> Timestamp
    private let limits: ExportBatch.Limits
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let follower: LogFollower
    private let state: Locked<State>

    /// The file in the data directory that keeps the export's `LogCursor`.
    public static let cursorFile = "clickhouse-export.json"

    public init(store: RecordLog, schema: ClickHouseSchema, client: ClickHouseClient, node: String, dataDirectory: String,
                clock: @escaping @Sendable () -> Timestamp, limits: ExportBatch.Limits = .standard, interval: Double = 1,
                retry: RetrySchedule = RetrySchedule(),
                announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void,
                observer: (@Sendable (LogTurn) -> Void)? = nil) {
        self.store = store
        self.schema = schema
        self.client = client
        self.node = node
        file = DurableJSONFile(path: dataDirectory + "/" + Self.cursorFile, empty: nil)
        self.clock = clock
        self.limits = limits
        self.announce = announce
        follower = LogFollower(thread: "clickhouse-export", events: "export", interval: interval, retry: retry, clock: clock,
                               announce: announce, observer: observer)
        let target = client.target.description
        var initial = State(cursor: LogCursor(node: node, target: target))
        do {
            initial.cursor = try LogCursor.load(file, node: node, target: target, logEnd: store.durablePrefix.end)
        } catch {
            initial.stopped = error.description
        }
        state = Locked(initial)
    }

    public func start() {
        if let reason = state.withLock({ $0.stopped }) {
            announce("export_stopped", [("reason", .string(reason))])
            return
        }
        follower.start(Consumer(exporter: self))
    }

    /// Stops after the statement in flight (cancelled), without moving the cursor past anything unsent.
    public func stop() {
        follower.stop(cancel: client.stop)
    }

    /// The log offset every table's export has passed: a segment that ends there or before is in
    /// ClickHouse whole.
    public var exportedThrough: Int {
        state.withLock { s in schema.tables.map { s.cursor.position(of: $0.name).offset }.min() ?? 0 }
    }

    public var status: Status {
        let s = state.withLock { $0 }
        let health = follower.health
        let now = clock()
        let tables = schema.tables.map { table -> TableStatus in
            let position = s.cursor.position(of: table.name)
            let lag = max(0, store.count(of: table.kind) - position.records - position.unreadable)
            return TableStatus(table: table.name, kind: table.kind, exportedRows: position.records, unreadable: position.unreadable,
                               lagRecords: lag, lagSeconds: s.lag[table.name, default: StreamLag()].seconds(waiting: lag, now: now),
                               paused: s.paused[table.name])
        }
        return Status(target: s.cursor.target, schemaReady: s.schemaReady, tables: tables, lastError: health.lastError,
                      lastErrorAt: health.lastErrorAt, failuresInARow: health.failuresInARow, failures: health.failures,
                      batches: health.batches, stopped: s.stopped)
    }

    /// The export's turn, as its follower runs it. A backlog goes out batch after full batch.
    /// Caught up, the export sends what came in the follower's `interval` as one batch a table:
    /// ClickHouse makes a part of every insert, and many small ones cost it far more than the
    /// rows do.
    private final class Consumer: LogConsumer, @unchecked Sendable {
        let exporter: ClickHouseExporter
        /// The last batch's bytes, for the next batch's memory; touched by the follower's thread alone.
        var buffer: [UInt8] = []

        init(exporter: ClickHouseExporter) { self.exporter = exporter }

        func turn(_ follower: LogFollower) -> LogTurn {
            guard exporter.state.withLock({ $0.schemaReady }) else { return exporter.createSchema() }
            guard exporter.state.withLock({ $0.sentBeforeRestore != nil }) else { return exporter.askSentBeforeRestore() }
            let turn = exporter.exportTurn(&buffer)
            if case .failed = turn { return turn }
            exporter.heartbeat()
            return turn
        }
    }

    private var stopping: Bool { follower.isStopping }

    /// Creates what is missing, and refuses a database whose schema is newer than this endpoint's.
    private func createSchema() -> LogTurn {
        let database = client.target.database
        for statement in schema.statements(database: database) {
            guard case .done = client.run(statement).failure(self) else { return .failed }
        }
        guard case .done(let text) = client.run("SELECT max(version) FROM \(database).schema_version FORMAT TabSeparated").failure(self) else {
            return .failed
        }
        let found = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // Tables an older version made lack the columns added since; a newer schema is left as
        // it is. Two nodes adding the same column at once: the second fails, and its next turn
        // finds the column there.
        if found <= ClickHouseSchema.version {
            guard case .done(let existing) = client.run(ClickHouseSchema.columnsQuery(database: database)).failure(self) else { return .failed }
            for statement in schema.missingColumns(database: database, existing: existing) {
                guard case .done = client.run(statement).failure(self) else { return .failed }
                announce("export_column_added", [("statement", .string(statement))])
            }
        }
        if found > ClickHouseSchema.version {
            let reason = "the schema in \(client.target) is version \(found), newer than this endpoint's \(ClickHouseSchema.version): upgrade the endpoint"
            state.withLock { s in
                for table in schema.tables { s.paused[table.name] = reason }
            }
            announce("export_paused", [("table", .string("*")), ("reason", .string(reason))])
        } else if found < ClickHouseSchema.version {
            let insert = "INSERT INTO \(database).schema_version (version, node, applied_at) VALUES (\(ClickHouseSchema.version), '\(node)', now())"
            guard case .done = client.run(insert).failure(self) else { return .failed }
        }
        state.withLock { $0.schemaReady = true }
        announce("export_schema_ready", [("clickhouse", .string(client.target.description)), ("version", .number(String(ClickHouseSchema.version)))])
        return .sentFull
    }

    /// Seconds between two rows in `node_exports`: a node silent for three of them is named on the
    /// cluster's page.
    public static let heartbeatSeconds: UInt64 = 30

    /// After a turn that reached ClickHouse: this node's row in `node_exports`, at most every
    /// `heartbeatSeconds` of the machine's monotonic clock (the endpoint's may stand still in a
    /// test), stamped with ClickHouse's own clock so that nodes' clocks never disagree. A failure
    /// here costs only the row: the next turn tries again.
    private func heartbeat() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { s in s.lastHeartbeat.map { now - $0 >= Self.heartbeatSeconds * 1_000_000_000 } ?? true }
        guard due else { return }
        let lag = status.lagSeconds
        let insert = "INSERT INTO \(client.target.database).node_exports (node, exported_at, lag_seconds) VALUES (\(ClickHouseClient.quoted(node)), now(), \(String(format: "%.3f", lag)))"
        if case .done = client.run(insert) { state.withLock { $0.lastHeartbeat = now } }
    }

    /// A node restored from a backup (`RecordLog.restores`) may have sent ClickHouse more than
    /// the backup holds before it was lost: the records after the backup's cursor, and after its
    /// cut. Those after the cut are gone from the log (new records get ids above them); those
    /// between the cursor and the cut would be sent again, rows that ClickHouse keeps once, but
    /// counts batched otherwise that would count them twice, or, deleted to prevent that, lose
    /// the lost records' counts with them. So the export asks ClickHouse, for each table, the
    /// highest id it holds of this node below the restore's id floor, rows and counts both (the
    /// counts go in after the rows: their batch's last id), and passes over the records up to it.
    private func askSentBeforeRestore() -> LogTurn {
        guard let floor = store.restores.last?.floor else {
            state.withLock { $0.sentBeforeRestore = [:] }
            return .sent
        }
        let database = client.target.database, me = ClickHouseClient.quoted(node)
        var sent: [String: UInt64] = [:]
        for table in schema.tables {
            let query = table.rollup.map {
                "SELECT max(batch_last_id) FROM \(database).\($0.name) WHERE node = \(me) AND batch_first_id < \(floor) FORMAT TabSeparated"
            } ?? "SELECT max(id) FROM \(database).\(table.name) WHERE node = \(me) AND id < \(floor) FORMAT TabSeparated"
            guard case .done(let text) = client.run(query).failure(self) else { return .failed }
            sent[table.name] = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        state.withLock { $0.sentBeforeRestore = sent }
        announce("export_restore_checked", sent.sorted { $0.key < $1.key }.map { ($0.key, .number(String($0.value))) })
        return .sent
    }

    /// One batch for each table that has records waiting.
    /// `buffer`: the last batch's bytes, for the next batch's memory.
    private func exportTurn(_ buffer: inout [UInt8]) -> LogTurn {
        var sent = false, full = false
        for table in schema.tables {
            let (position, paused, skip) = state.withLock {
                ($0.cursor.position(of: table.name), $0.paused[table.name] != nil, $0.sentBeforeRestore?[table.name] ?? 0)
            }
            let readAt = clock()
            let end = store.durablePrefix.end
            guard !paused, !stopping else { continue }
            guard position.offset < end else {
                state.withLock { $0.lag[table.name, default: StreamLag()].readToEnd(at: readAt) }
                continue
            }
            let batch = ExportBatch.read(table, node: node, from: position.offset, through: end, in: store, limits: limits,
                                         skippingThrough: skip, reusing: &buffer)
            if !batch.isFull { state.withLock { $0.lag[table.name, default: StreamLag()].readToEnd(at: readAt) } }
            defer { buffer = batch.body }
            if batch.unreadable > 0 {
                announce("export_unreadable_records", [("table", .string(table.name)), ("records", .number(String(batch.unreadable)))])
            }
            guard batch.rows > 0 else {
                // Only other kinds' records, or unreadable ones: nothing to send, and nothing lost by
                // reading them again after a crash, so the cursor moves without a write.
                state.withLock { s in
                    s.cursor.advance(past: batch)
                    s.lag[table.name, default: StreamLag()].caughtUp()
                }
                continue
            }
            state.withLock { $0.lag[table.name, default: StreamLag()].pending(since: batch.firstTime) }
            if let rollup = table.rollup, let first = batch.firstID, !preparedRollup(rollup, from: first) { return .failed }
            switch insert(batch, into: table) {
            case .done:
                let cursor = state.withLock { s -> LogCursor in
                    s.cursor.advance(past: batch)
                    s.lag[table.name, default: StreamLag()].caughtUp()
                    return s.cursor
                }
                follower.noteAccepted([("table", .string(table.name))])
                do {
                    try file.save(cursor)
                } catch {
                    // Not past what is on disk: the batch goes again, as it would after a crash,
                    // rather than later batches being cut from an offset a restart would not know.
                    state.withLock { $0.cursor.streams[table.name] = position }
                    noteFailure("the export's cursor cannot be saved: \(error)")
                    return .failed
                }
                sent = true
                full = full || batch.isFull
            case .refused(let reason):
                state.withLock { $0.paused[table.name] = reason }
                noteFailure("ClickHouse refused a batch of \(table.name): \(reason)", countsInARow: false)
                announce("export_paused", [("table", .string(table.name)), ("reason", .string(reason)),
                                           ("rows", .number(String(batch.rows)))])
            case .missingTable(let reason):
                state.withLock { $0.schemaReady = false }
                noteFailure(reason)
                return .failed
            case .unavailable(let reason):
                noteFailure(reason)
                return .failed
            }
        }
        return full ? .sentFull : sent ? .sent : .idle
    }

    /// The batch's rows, then its rollup's counts: both or, on a failure, the whole batch again later.
    private func insert(_ batch: ExportBatch, into table: ClickHouseTable) -> ClickHouseClient.Outcome {
        let database = client.target.database
        let rows = client.run("INSERT INTO \(database).\(table.name) FORMAT JSONEachRow", body: batch.body)
        guard case .done = rows, let rollup = table.rollup, !batch.rollupBody.isEmpty else { return rows }
        return client.run("INSERT INTO \(database).\(rollup.name) FORMAT JSONEachRow", body: batch.rollupBody)
    }

    /// Before this run's first batch of counts: counts this node sent earlier for the records
    /// from `first` on are deleted, and the deletion waited for. Usually there are none. After a
    /// crash in the window there is one batch's, which the resent batch would replace anyway; but
    /// a cursor restored from a backup, lost, or cut at other places by another release would
    /// batch the same records otherwise, and the earlier counts would be counted beside the new.
    /// (After a restore, `first` is past every batch the lost log sent: `askSentBeforeRestore`.)
    private func preparedRollup(_ rollup: ClickHouseRollup, from first: UInt64) -> Bool {
        if state.withLock({ $0.preparedRollups.contains(rollup.name) }) { return true }
        let database = client.target.database
        let mine = "node = \(ClickHouseClient.quoted(node)) AND batch_first_id >= \(first)"
        guard case .done(let text) = client.run("SELECT count() FROM \(database).\(rollup.name) WHERE \(mine) FORMAT TabSeparated").failure(self) else {
            return false
        }
        if (Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1) > 0 {
            guard case .done = client.run("ALTER TABLE \(database).\(rollup.name) DELETE WHERE \(mine)").failure(self) else { return false }
            // Mutations run in the background: until this one is done, FINAL would still see the old counts.
            let waiting = "SELECT count() FROM system.mutations WHERE database = \(ClickHouseClient.quoted(database)) AND table = \(ClickHouseClient.quoted(rollup.name)) AND is_done = 0 FORMAT TabSeparated"
            let deadline = Date().addingTimeInterval(120)
            while true {
                guard case .done(let pending) = client.run(waiting).failure(self) else { return false }
                if Int(pending.trimmingCharacters(in: .whitespacesAndNewlines)) == 0 { break }
                guard Date() < deadline, !stopping else { return false }
                follower.pause(0.2)  // ClickHouse signals nothing: its mutation is polled, bounded
            }
        }
        state.withLock { _ = $0.preparedRollups.insert(rollup.name) }
        return true
    }

    /// A table or the database is gone: the next turn creates the schema again.
    fileprivate func needsSchema() {
        state.withLock { $0.schemaReady = false }
    }

    fileprivate func noteFailure(_ reason: String, countsInARow: Bool = true) {
        follower.noteFailure(reason, countsInARow: countsInARow)
    }
}

private extension ClickHouseClient.Outcome {
    /// The outcome, with a failure noted on `exporter`.
    func failure(_ exporter: ClickHouseExporter) -> Self {
        switch self {
        case .done: break
        case .missingTable(let reason):
            exporter.noteFailure(reason)
            exporter.needsSchema()
        case .refused(let reason), .unavailable(let reason): exporter.noteFailure(reason)
        }
        return self
    }
}
