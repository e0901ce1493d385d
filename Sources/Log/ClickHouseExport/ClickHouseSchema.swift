/// The export's schema: its version and its tables. `deploy/clickhouse/schema.sql` is this,
/// written out (`attribution-endpoint clickhouse schema`; a test keeps the file equal to it), and
/// the exporter creates what is missing from the same statements when it starts.
///
/// A change to a table is a new version: the exporter refuses a database whose schema is newer
/// than its own, rather than write rows a newer schema does not expect. A version only adds
/// columns, which the exporter adds to an older database's tables (`missingColumns`).
///
/// - 1: the first.
/// - 2: `apple_ads_calls` gains `impressionDate` and `supplyPlacement` (Apple's answer since 2025–2026).
/// - 3: `postbacks` gains `schema_version` and `schema_ambiguous_versions` (schemas keep their history).
public struct ClickHouseSchema: Sendable {
    public static let version = 3
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

    /// Each node's last export turn, by ClickHouse's clock: the cluster's page names a node that
    /// has not exported for a while (`ClusterNodes`). A table of its own, created if missing, so a
    /// database of any version gains it without a new schema version; one row a node keeps after
    /// merges.
    public static func nodeExportsTable(database: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(database).node_exports
        (
            `node` String,
            `exported_at` DateTime('UTC'),
            `lag_seconds` Float64
        )
        ENGINE = ReplacingMergeTree(exported_at)
        ORDER BY node
        """
    }

    /// Every statement, in order; each can run again without harm.
    public func statements(database: String) -> [String] {
        ["CREATE DATABASE IF NOT EXISTS \(database)", Self.versionTable(database: database), Self.nodeExportsTable(database: database)]
            + tables.flatMap { table in [table.createStatement(database: database)] + (table.rollup.map { [$0.createStatement(database: database)] } ?? []) }
    }

    /// What `system.columns` lists for this database's tables.
    public static func columnsQuery(database: String) -> String {
        "SELECT table, name FROM system.columns WHERE database = \(ClickHouseClient.quoted(database)) FORMAT TabSeparated"
    }

    /// The `ALTER TABLE … ADD COLUMN` statements that bring tables made by an older version up to
    /// this one, given `columnsQuery`'s answer. A table missing altogether is `statements`' to create.
    public func missingColumns(database: String, existing: String) -> [String] {
        var present: [String: Set<String>] = [:]
        for line in existing.split(separator: "\n") {
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard cells.count == 2 else { continue }
            present[String(cells[0]), default: []].insert(String(cells[1]))
        }
        return tables.flatMap { table -> [String] in
            guard let columns = present[table.name] else { return [] }
            return table.allColumns.filter { !columns.contains($0.name) }.map {
                "ALTER TABLE \(database).\(table.name) ADD COLUMN \($0.quotedName) \($0.type.sql)"
            }
        }
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
