import DurableFiles

/// How far each table's export has come, kept in `clickhouse-export.json` in the data directory:
/// per table, the log offset the next batch starts at and the rows sent so far. Saved (written,
/// flushed, renamed) after every batch ClickHouse accepted, and never before: a crash between the
/// two sends that batch again, which the tables' (node, id) key makes harmless.
///
/// The cursor names the node and the ClickHouse it was written for. Pointed at another server or
/// database, the export starts again from the beginning of the log: the new one has none of it.
/// Under another node name it refuses to go on, since the same records would be counted twice
/// under two names.
public struct ExportCursor: Codable, Sendable, Equatable {
    public struct Position: Codable, Sendable, Equatable {
        public var offset: Int
        public var rows: Int
        public var unreadable: Int

        public init(offset: Int = 0, rows: Int = 0, unreadable: Int = 0) {
            self.offset = offset
            self.rows = rows
            self.unreadable = unreadable
        }
    }

    public var node: String
    /// The server and database, as configured (no credentials).
    public var target: String
    public var tables: [String: Position]

    public init(node: String, target: String, tables: [String: Position] = [:]) {
        self.node = node
        self.target = target
        self.tables = tables
    }

    public static let fileName = "clickhouse-export.json"

    public func position(of table: String) -> Position { tables[table] ?? Position() }

    /// The cursor after `batch` was accepted.
    public mutating func advance(past batch: ExportBatch) {
        var position = self.position(of: batch.table)
        position.offset = batch.end
        position.rows += batch.rows
        position.unreadable += batch.unreadable
        tables[batch.table] = position
    }

    public enum LoadError: Error, CustomStringConvertible {
        case otherNode(String)
        case unreadable(String)

        public var description: String {
            switch self {
            case .otherNode(let node):
                "the export's cursor was written by node '\(node)': renaming a node would export its records again under the new name"
            case .unreadable(let reason): reason
            }
        }
    }

    /// The cursor for `node` and `target` from `file`: a new one when there is none, or when it
    /// was written for another target; an error when it was written by another node.
    public static func load(_ file: DurableJSONFile<ExportCursor?>, node: String, target: String, logEnd: Int) throws(LoadError) -> ExportCursor {
        let saved: ExportCursor?
        do { saved = try file.load() } catch { throw .unreadable("\(error)") }
        guard var cursor = saved else { return ExportCursor(node: node, target: target) }
        guard cursor.node == node else { throw .otherNode(cursor.node) }
        guard cursor.target == target else { return ExportCursor(node: node, target: target) }
        // A log shorter than the cursor is another log (restored, replaced): export it all again.
        if cursor.tables.values.contains(where: { $0.offset > logEnd }) { cursor.tables = [:] }
        return cursor
    }
}
