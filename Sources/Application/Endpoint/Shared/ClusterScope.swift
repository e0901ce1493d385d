import ClickHouseExport
import HTTPServer
import Primitives

/// `?scope=cluster` on the summary APIs: the numbers of every node that exports to the same
/// ClickHouse, counted there, instead of this node's own. Queries run on a worker thread of their
/// own (the event loop never waits for ClickHouse); a full queue is a 503, and so is a ClickHouse
/// that does not answer: the page then says so and the node's own numbers are still one click away.
struct ClusterScope: Sendable {
    let client: ClickHouseClient
    let pool: WorkerPool

    var database: String { client.target.database }

    enum Scope: Sendable { case node, cluster }

    /// The request's `scope` (default node), and its other query items.
    static func split(_ items: [(name: String, value: String)]) throws(Problem) -> (Scope, [(name: String, value: String)]) {
        var scope = Scope.node
        var rest: [(name: String, value: String)] = []
        for item in items {
            guard item.name == "scope" else { rest.append(item); continue }
            switch item.value {
            case "", "node": scope = .node
            case "cluster": scope = .cluster
            default: throw Problem(status: 400, rule: "invalid_scope", field: "scope", detail: "scope must be node or cluster")
            }
        }
        return (scope, rest)
    }

    static let unavailable = Problem(status: 409, rule: "cluster_scope_unavailable", field: "scope",
                                     detail: "this node exports to no ClickHouse (--clickhouse), so it knows only its own numbers: use scope=node")

    /// Answers with what `work` makes on a worker thread; its refusals become problem+json.
    func answer(_ responder: HTTPResponder, _ work: @escaping @Sendable () throws -> HTTPResponse) {
        let accepted = pool.submit {
            do {
                responder.respond(try work())
            } catch let problem as Problem {
                responder.respond(problem.response)
            } catch {
                responder.respond(Problem(status: 503, rule: "cluster_summary_unavailable", detail: "\(error)").response)
            }
        }
        if !accepted {
            responder.respond(Problem(status: 503, rule: "cluster_summary_busy",
                                      detail: "cluster summaries already waiting for ClickHouse; try again shortly").response)
        }
    }

    func rows(_ sql: String) throws -> [ClickHouseRow] { try asked { () throws(ClickHouseClient.QueryError) in try client.rows(sql) } }

    func tabSeparatedRows(_ sql: String) throws -> [[String]] {
        try asked { () throws(ClickHouseClient.QueryError) in try client.tabSeparatedRows(sql) }
    }

    /// A query's failure as the problem the page is answered with.
    private func asked<T>(_ query: () throws(ClickHouseClient.QueryError) -> T) throws -> T {
        do {
            return try query()
        } catch {
            throw Problem(status: 503, rule: "cluster_summary_unavailable", detail: error.description)
        }
    }

    /// `received_at_ms` within the days `from...to`; `received_at` too, so that ClickHouse reads
    /// only the months' partitions it needs.
    static func period(from: Int32, to: Int32) -> String {
        // DateTime holds 32 bits of seconds: days past 2106 are clamped to its end.
        let lastSecond: Int64 = 4_294_967_295
        let start = max(0, Int64(from) * 86_400), end = max(0, Int64(to) + 1) * 86_400
        return "received_at >= toDateTime(\(min(start, lastSecond))) AND received_at_ms >= \(start * 1000)"
            + " AND (received_at_ms < \(end * 1000))" + (end <= lastSecond ? " AND received_at < toDateTime(\(end))" : "")
    }
}
