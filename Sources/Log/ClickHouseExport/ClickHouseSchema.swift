/// The export's schema: its version and its tables. `deploy/clickhouse/schema.sql` is this,
/// written out (`attribution-endpoint clickhouse schema`; a test keeps the file equal to it), and
/// the exporter creates what is missing from the same statements when it starts.
///
/// A change to a table is a new version: the exporter refuses a database whose schema is newer
/// than its own, rather than write rows a newer schema does not expect.
public struct ClickHouseSchema: Sendable {
    public static let version = 1
    public let tables: [ClickHouseTable]

    public init(tables: [ClickHouseTable]) {
        self.tables = tables
    }

    public static func versionTable(database: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(database).schema_version
        (
            `version` UInt32,
            `node` String,
            `applied_at` DateTime('UTC')
        )
        ENGINE = ReplacingMergeTree()
        ORDER BY (version, node)
        """
    }

    /// Every statement, in order; each can run again without harm.
    public func statements(database: String) -> [String] {
        ["CREATE DATABASE IF NOT EXISTS \(database)", Self.versionTable(database: database)]
            + tables.flatMap { table in [table.createStatement(database: database)] + (table.rollup.map { [$0.createStatement(database: database)] } ?? []) }
    }

    /// `deploy/clickhouse/schema.sql`.
    public func file(database: String = "attribution") -> String {
        var text = """
            -- The attribution endpoint's tables in ClickHouse, schema version \(Self.version).
            -- Written by `attribution-endpoint clickhouse schema`; the endpoint creates whatever is
            -- missing itself when started with --clickhouse. Runs on ClickHouse 18.16 (Debian) and
            -- on current releases. Read with FINAL (or argMax by (node, id)): a batch sent twice
            -- leaves two copies of its rows until ClickHouse merges them.
            -- No IP address, User-Agent or device identifier is ever exported.


            """
        for statement in statements(database: database) {
            text += statement + ";\n\n"
        }
        text += "INSERT INTO \(database).schema_version (version, node, applied_at) VALUES (\(Self.version), 'schema.sql', now());\n"
        return text
    }
}
