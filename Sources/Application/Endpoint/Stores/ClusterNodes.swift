import ClickHouseExport
import Primitives

/// Each node's last export turn, as `node_exports` holds it (a row every
/// `ClickHouseExporter.heartbeatSeconds` while a node's export reaches ClickHouse), for the
/// cluster's page: a node down, or cut off from ClickHouse, is named instead of its numbers
/// silently missing from every total. Times are ClickHouse's, so nodes' clocks never disagree.
enum ClusterNodes {
    /// A node silent this long is named as not exporting: ten heartbeats.
    static let staleAfterSeconds = 300
    /// A node silent longer is taken as retired and no longer listed.
    static let forgottenAfterSeconds = 7 * 86_400

    static func sql(database: String) -> String {
        """
        SELECT node, toUInt32(max(exported_at)) AS last, toUInt32(now()) - toUInt32(max(exported_at)) AS silent
        FROM \(database).node_exports
        GROUP BY node
        HAVING silent < \(forgottenAfterSeconds)
        ORDER BY node
        """
    }

    /// `[{"node":"node-1","last_export":"…","seconds_since":12,"stale":false}, …]`; null when the
    /// table cannot be read, so the numbers are still shown.
    static func json(_ scope: ClusterScope) -> String {
        guard let rows = try? scope.tabSeparatedRows(sql(database: scope.database)) else { return "null" }
        return json(rows: rows)
    }

    /// `sql`'s rows (node, last export in Unix seconds, seconds since) as the answers carry them.
    static func json(rows: [[String]]) -> String {
        let nodes = rows.compactMap { row -> String? in
            guard row.count == 3, let last = Int64(row[1]), let silent = Int(row[2]) else { return nil }
            var out = "{\"node\":"
            JSONValue.writeString(row[0], to: &out)
            out += ",\"last_export\":\"\(Timestamp(millisecondsSinceEpoch: last * 1000).rfc3339)\",\"seconds_since\":\(max(0, silent))"
            return out + ",\"stale\":\(silent >= staleAfterSeconds)}"
        }
        return "[" + nodes.joined(separator: ",") + "]"
    }
}
