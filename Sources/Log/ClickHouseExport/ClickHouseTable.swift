import RecordLog

/// Where one kind of record goes in ClickHouse: the table, the codec that reads the records, and
/// the columns taken from the codec's rows by name.
///
/// Every table begins with the same columns: `node` and `id` (the node's name and the record's
/// id in its log: the key), `received_at` (seconds, UTC) and `received_at_ms` (the log's exact
/// time); and ends with `extra`, a JSON object of whatever the row had that no column took, so
/// that nothing the export knows is lost on the way. Rows are kept by a ReplacingMergeTree
/// ordered by (node, id): a batch sent twice (a time-out, a crash between ClickHouse's 200 and
/// the cursor reaching disk) leaves two copies until a merge, and one in every query that reads
/// with `FINAL`.
public struct ClickHouseTable: Sendable {
    public let name: String
    public let codec: any RecordCodec
    public let columns: [ClickHouseColumn]
    /// Members of the codec's rows that are never exported, not even under `extra`.
    public let omitted: Set<String>
    /// Counts of the table's records kept beside it, for summaries.
    public let rollup: ClickHouseRollup?
    /// A faster writer of the same rows, for a kind exported at ingest rate.
    public let encoder: (@Sendable () -> any ClickHouseRowEncoder)?

    public static let keyColumns = [ClickHouseColumn("node", .string), ClickHouseColumn("id", .uint64),
                                    ClickHouseColumn("received_at", .dateTime), ClickHouseColumn("received_at_ms", .uint64)]
    public static let extraColumn = ClickHouseColumn("extra", .string)

    public init(name: String, codec: any RecordCodec, columns: [ClickHouseColumn], omitted: Set<String> = [],
                rollup: ClickHouseRollup? = nil, encoder: (@Sendable () -> any ClickHouseRowEncoder)? = nil) {
        self.name = name
        self.codec = codec
        self.columns = columns
        self.omitted = omitted
        self.rollup = rollup
        self.encoder = encoder
    }

    public var kind: RecordKind { codec.kind }

    public var allColumns: [ClickHouseColumn] { Self.keyColumns + columns + [Self.extraColumn] }

    /// The table's `CREATE TABLE IF NOT EXISTS`, as both ClickHouse versions read it. Monthly
    /// partitions: a year's history drops a month at a time, and (node, id) never spans two.
    public func createStatement(database: String) -> String {
        let columnLines = allColumns.map { "    \($0.quotedName) \($0.type.sql)" }.joined(separator: ",\n")
        return """
            CREATE TABLE IF NOT EXISTS \(database).\(name)
            (
            \(columnLines)
            )
            ENGINE = ReplacingMergeTree()
            PARTITION BY toYYYYMM(received_at)
            ORDER BY (node, id)
            """
    }
}
