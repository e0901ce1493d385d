#if canImport(Glibc)
import Glibc
#endif
import Primitives
import RecordLog

/// Counts kept beside a table of records, so that a summary over a year of them reads thousands
/// of rows, not millions: each batch's records grouped by `keys` and counted, one row per group.
///
/// A batch can reach ClickHouse twice (see `ClickHouseTable`), and rows of counts cannot be told
/// apart by a record's id. They are keyed instead by the batch they came from, named by its
/// first record's id: a batch sent again starts at the same record (the cursor never moves past a
/// record before its batch is accepted) and holds the same records, or those and more (the log
/// grew meanwhile). The table is a ReplacingMergeTree ordered by (node, batch_first_id, keys) and
/// versioned by `batch_last_id`, so with `FINAL` the later, larger batch's counts replace the
/// earlier's, group by group. A cursor restored from a backup, lost, or cut at other places by
/// another release would batch the same records otherwise: before each run's first batch of
/// counts, the exporter deletes the node's counts from that batch's first record on.
public struct ClickHouseRollup: Sendable {
    public let name: String
    /// Never nullable: ClickHouse 18.16 refuses a nullable column in a sorting key.
    public let keys: [ClickHouseColumn]
    /// A record's values for `keys`, in order; nil leaves it out of the counts.
    public let key: @Sendable (ExportRow, Timestamp) -> [JSONValue]?

    public init(name: String, keys: [ClickHouseColumn], key: @escaping @Sendable (ExportRow, Timestamp) -> [JSONValue]?) {
        self.name = name
        self.keys = keys
        self.key = key
    }

    public static let batchColumns = [ClickHouseColumn("node", .string), ClickHouseColumn("batch_first_id", .uint64),
                                      ClickHouseColumn("batch_last_id", .uint64)]
    public static let countColumn = ClickHouseColumn("records", .uint64)

    public var allColumns: [ClickHouseColumn] { Self.batchColumns + keys + [Self.countColumn] }

    public func createStatement(database: String) -> String {
        let columnLines = allColumns.map { "    \($0.quotedName) \($0.type.sql)" }.joined(separator: ",\n")
        let order = (["node", "batch_first_id"] + keys.map(\.name)).map { "`\($0)`" }.joined(separator: ", ")
        return """
            CREATE TABLE IF NOT EXISTS \(database).\(name)
            (
            \(columnLines)
            )
            ENGINE = ReplacingMergeTree(batch_last_id)
            ORDER BY (\(order))
            """
    }
}

/// One batch's counts, as they are gathered while its records are read. A group read through the
/// codec is named by its key's literals as the rows write them (`,"day":20759,"role":"source",…`);
/// one the table's row encoder wrote is named by the encoder's own short form of the key, cheaper
/// to make, hash and compare at full ingest, and turned into literals once per group when the
/// batch is sent. Groups are counted by their literals then, so a group met both ways (a batch
/// holding both body shapes) is one row.
struct RollupCounts {
    private let rollup: ClickHouseRollup
    /// Each key column's `,"name":`.
    private let names: [[UInt8]]
    private var counts: [Group: Int] = [:]
    private var order: [Group] = []
    private var scratch: [UInt8] = []

    init(_ rollup: ClickHouseRollup) {
        self.rollup = rollup
        names = rollup.keys.map { Array(("," + ClickHouseType.quoted($0.name) + ":").utf8) }
    }

    var isEmpty: Bool { counts.isEmpty }

    /// A record read through its codec.
    mutating func add(_ row: ExportRow, time: Timestamp) {
        guard let values = rollup.key(row, time), values.count == rollup.keys.count else { return }
        scratch.removeAll(keepingCapacity: true)
        for (i, (column, value)) in zip(rollup.keys, values).enumerated() {
            scratch.append(contentsOf: names[i])
            // A value that fits no column leaves the record out rather than miscount it.
            guard column.type.appendLiteral(value, to: &scratch) else { return }
        }
        add(Group(encoded: false, bytes: scratch))
    }

    /// A record whose row encoder wrote its key, in the encoder's form.
    mutating func add(encodedKey key: [UInt8]) {
        add(Group(encoded: true, bytes: key))
    }

    private mutating func add(_ group: Group) {
        if let index = counts.index(forKey: group) {
            counts.values[index] += 1
        } else {
            counts[group] = 1
            order.append(group)
        }
    }

    /// The rows, in the order their groups first appeared: the same batch gives the same bytes.
    /// `encoder` is the one that wrote the encoded keys.
    func body(node: String, firstID: UInt64, lastID: UInt64, encoder: (any ClickHouseRowEncoder)?) -> [UInt8] {
        var literals: [Group: Int] = [:]
        var literalOrder: [Group] = []
        for group in order {
            var literal = group
            if group.encoded {
                var bytes: [UInt8] = []
                // Never a row of defaults for a key that cannot be read (none `encode` writes).
                guard let encoder, encoder.appendCountLiterals(ofKey: group.bytes, to: &bytes) else { continue }
                literal = Group(encoded: false, bytes: bytes)
            }
            if literals[literal] == nil { literalOrder.append(literal) }
            literals[literal, default: 0] += counts[group] ?? 0
        }
        var out: [UInt8] = []
        let prefix = Array("{\"node\":\(ClickHouseType.quoted(node)),\"batch_first_id\":\(firstID),\"batch_last_id\":\(lastID)".utf8)
        for group in literalOrder {
            out.append(contentsOf: prefix)
            out.append(contentsOf: group.bytes)
            out.append(contentsOf: ",\"records\":".utf8)
            out.appendDecimal(UInt64(clamping: literals[group] ?? 0))
            out.append(contentsOf: "}\n".utf8)
        }
        return out
    }
}

/// A group's key, hashed as one run of bytes and compared with `memcmp` (an array of bytes hashes
/// and compares byte by byte, which showed in the export's profile at full ingest).
private struct Group: Hashable {
    var encoded: Bool
    var bytes: [UInt8]

    func hash(into hasher: inout Hasher) {
        hasher.combine(encoded)
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (a: Group, b: Group) -> Bool {
        a.encoded == b.encoded && a.bytes.count == b.bytes.count && a.bytes.withUnsafeBytes { x in
            b.bytes.withUnsafeBytes { y in
                guard let p = x.baseAddress, let q = y.baseAddress else { return x.count == y.count }
                return memcmp(p, q, x.count) == 0
            }
        }
    }
}
