import DurableFiles

/// A consumer's durable cursor: for each of its streams, the `LogPosition` it has reached. Kept in
/// a file of the data directory (`clickhouse-export.json` for the export), saved (written,
/// flushed, renamed) after every batch its destination accepted and never before.
///
/// The cursor names the node and the destination it was written for. Pointed at another
/// destination, the consumer starts again from the beginning of the log: the new one has none of
/// it. Under another node name it refuses to go on, since the destination would receive the same
/// records twice under two names.
public struct LogCursor: Codable, Sendable, Equatable {
    public var node: String
    /// The destination, as configured (no credentials).
    public var target: String
    public var streams: [String: LogPosition]

    public init(node: String, target: String, streams: [String: LogPosition] = [:]) {
        self.node = node
        self.target = target
        self.streams = streams
    }

    // "tables": the name the first consumer (ClickHouse) gave them, which cursors on disk carry.
    private enum CodingKeys: String, CodingKey {
        case node, target, streams = "tables"
    }

    public func position(of stream: String) -> LogPosition { streams[stream] ?? LogPosition() }

    public enum LoadError: Error, CustomStringConvertible {
        case otherNode(String, file: String)
        case unreadable(String)

        public var description: String {
            switch self {
            case .otherNode(let node, let file):
                "the cursor in \(file) was written by node '\(node)': renaming a node would send its records again under the new name"
            case .unreadable(let reason): reason
            }
        }
    }

    /// The cursor for `node` and `target` from `file`: a new one when there is none, or when it
    /// was written for another target; an error when it was written by another node.
    public static func load(_ file: DurableJSONFile<LogCursor?>, node: String, target: String, logEnd: Int) throws(LoadError) -> LogCursor {
        let saved: LogCursor?
        do { saved = try file.load() } catch { throw .unreadable("\(error)") }
        guard var cursor = saved else { return LogCursor(node: node, target: target) }
        guard cursor.node == node else { throw .otherNode(cursor.node, file: file.path.split(separator: "/").last.map(String.init) ?? file.path) }
        guard cursor.target == target else { return LogCursor(node: node, target: target) }
        // A log shorter than the cursor is another log (restored, replaced): send it all again.
        if cursor.streams.values.contains(where: { $0.offset > logEnd }) { cursor.streams = [:] }
        return cursor
    }
}
