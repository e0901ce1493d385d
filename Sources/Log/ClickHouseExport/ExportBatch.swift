import Primitives
import RecordLog

/// One `INSERT … FORMAT JSONEachRow` worth of a table's records: the rows, and where in the log
/// the next batch starts. Built from the log alone, so building it again from the same offset
/// gives the same rows: what makes a resend after a crash a true duplicate.
public struct ExportBatch: Sendable {
    public var table: String
    /// NDJSON, one row per line.
    public var body: [UInt8] = []
    public var rows = 0
    /// Records of the table's kind that its codec could not read: counted, logged, never sent.
    public var unreadable = 0
    /// Records passed over because ClickHouse holds them already (`skippingThrough`).
    public var skipped = 0
    /// The log offset just after the last record this batch looked at.
    public var end: Int
    /// Whether a limit cut it: more records wait after it.
    public var isFull = false
    /// The time of the batch's first row: how far behind the export is.
    public var firstTime: Timestamp?
    /// The ids of its first and last rows.
    public var firstID: UInt64?
    public var lastID: UInt64?
    /// The table's rollup rows for these records, if it has a rollup.
    public var rollupBody: [UInt8] = []

    public struct Limits: Sendable {
        public var rows: Int
        public var bytes: Int

        public init(rows: Int, bytes: Int) {
            self.rows = rows
            self.bytes = bytes
        }

        public static let standard = Limits(rows: 50_000, bytes: 16 << 20)
    }

    /// Reads `table`'s records from `start` (a record boundary) up to `through` (the durable end
    /// of the log), until `limits` are met.
    /// `skippingThrough`: records with an id up to it are passed over, not sent (what a restored
    /// node's lost log sent already: `ClickHouseExporter`).
    public static func read(_ table: ClickHouseTable, node: String, from start: Int, through end: Int, in store: RecordLog,
                            limits: Limits = .standard, encoding: Bool = true, skippingThrough skip: UInt64 = 0) -> ExportBatch {
        var none: [UInt8] = []
        return read(table, node: node, from: start, through: end, in: store, limits: limits, encoding: encoding,
                    skippingThrough: skip, reusing: &none)
    }

    /// The same, writing into `buffer`'s memory (an earlier batch's body, which it takes, leaving
    /// `buffer` empty): a fresh 16 MB array costs its page faults and its growth copies again.
    /// Taken, not shared, since a shared array's `removeAll(keepingCapacity:)` allocates anew.
    public static func read(_ table: ClickHouseTable, node: String, from start: Int, through end: Int, in store: RecordLog,
                            limits: Limits = .standard, encoding: Bool = true, skippingThrough skip: UInt64 = 0,
                            reusing buffer: inout [UInt8]) -> ExportBatch {
        var batch = ExportBatch(table: table.name, end: start)
        swap(&batch.body, &buffer)
        batch.body.removeAll(keepingCapacity: true)
        guard start < end else { return batch }
        let read = table.codec.reader()
        var writer = RowWriter(table: table, node: node)
        var encoder = encoding ? table.encoder?() : nil
        let prefix = writer.prefix
        var counts = table.rollup.map(RollupCounts.init)
        var reachedLimit = false
        var key: [UInt8] = []
        let reached = store.scanRecords(of: table.kind, from: start, through: end) { view in
            if batch.rows >= limits.rows || batch.body.count >= limits.bytes {
                reachedLimit = true
                return false
            }
            if view.id <= skip {
                batch.skipped += 1
                batch.end = view.end
                return true
            }
            var written = false
            key.removeAll(keepingCapacity: true)
            if encoder?.encode(view, prefix: prefix, into: &batch.body, key: &key) == true {
                counts?.add(encodedKey: key)
                written = true
            } else if let row = read(view) {
                writer.write(row, id: view.id, time: view.time, into: &batch.body)
                counts?.add(row, time: view.time)
                written = true
            }
            if written {
                if batch.firstTime == nil {
                    batch.firstTime = view.time
                    batch.firstID = view.id
                }
                batch.lastID = view.id
                batch.rows += 1
            } else {
                batch.unreadable += 1
            }
            batch.end = view.end
            return true
        }
        // Read to where the scan got: past any records of other kinds, but never past what could
        // not be read (an I/O error ends the scan early; the next turn reads from there again).
        if !reachedLimit { batch.end = max(batch.end, reached) }
        batch.isFull = reachedLimit
        if let counts, !counts.isEmpty, let first = batch.firstID, let last = batch.lastID {
            batch.rollupBody = counts.body(node: node, firstID: first, lastID: last, encoder: encoder)
        }
        return batch
    }
}

/// Writes one table's rows: each row's members placed in the columns of the same name, what no
/// column takes kept under `extra`. Straight into the batch's bytes: this runs for every record
/// exported, at the node's full ingest rate.
struct RowWriter {
    private let columns: [ClickHouseColumn]
    /// Each column's `,"name":`, written once.
    private let keys: [[UInt8]]
    /// Column names by their length (-1: taken from the envelope, or never exported): a member's
    /// slot is found by a few byte compares, not a hash of its name.
    private let slotsByLength: [Int: [(name: String, slot: Int)]]
    let prefix: [UInt8]
    private var slots: [Range<Int>?]
    private var scratch: [UInt8] = []

    init(table: ClickHouseTable, node: String) {
        columns = table.columns
        keys = table.columns.map { Array(("," + ClickHouseType.quoted($0.name) + ":").utf8) }
        var byLength: [Int: [(name: String, slot: Int)]] = [:]
        for (i, column) in table.columns.enumerated() { byLength[column.name.utf8.count, default: []].append((column.name, i)) }
        // The envelope's own, and what is never exported: not taken from the row, not kept under `extra`.
        for name in ["node", "id", "received_at", "received_at_ms"] + table.omitted { byLength[name.utf8.count, default: []].append((name, -1)) }
        slotsByLength = byLength
        prefix = Array("{\"node\":\(ClickHouseType.quoted(node)),\"id\":".utf8)
        slots = Array(repeating: nil, count: table.columns.count)
    }

    private func slot(of key: String) -> Int? {
        slotsByLength[key.utf8.count]?.first { $0.name == key }?.slot
    }

    mutating func write(_ row: ExportRow, id: UInt64, time: Timestamp, into out: inout [UInt8]) {
        for i in slots.indices { slots[i] = nil }
        scratch.removeAll(keepingCapacity: true)
        var extra: [JSONMember] = []
        for member in row.members {
            guard let slot = slot(of: member.key) else {
                extra.append(member)
                continue
            }
            guard slot >= 0 else { continue }
            let start = scratch.count
            if columns[slot].type.appendLiteral(member.value, to: &scratch) {
                slots[slot] = start..<scratch.count
            } else if member.value != .null {
                extra.append(member)
            }
        }
        out.append(contentsOf: prefix)
        out.appendDecimal(id)
        let mark = out.count
        out.append(contentsOf: ",\"received_at\":".utf8)
        if ClickHouseType.appendDateTime(time, to: &out) {
            out.append(contentsOf: ",\"received_at_ms\":".utf8)
            out.appendDecimal(time.millisecondsSinceEpoch)
        } else {
            out.removeLast(out.count - mark)
        }
        for (i, range) in slots.enumerated() {
            guard let range else { continue }
            out.append(contentsOf: keys[i])
            out.append(contentsOf: scratch[range])
        }
        if !extra.isEmpty {
            out.append(contentsOf: ",\"extra\":".utf8)
            JSONValue.writeString(JSONValue.object(extra).serialized(), to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
    }
}
