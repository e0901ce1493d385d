import Foundation
import HTTPServer
import Locking
import LogConsumer
import Primitives

/// A stand-in for ClickHouse's HTTP interface, for what a real server cannot be told to do on
/// cue: fail the next inserts, refuse one table's rows. It keeps what it accepted, row by row, and
/// counts a row once per (node, id) as a query with `FINAL` would. The real server is tested by
/// scripts/clickhouse_export_test.py and scripts/cluster_test.py.
final class ClickHouseStandIn: Sendable {
    enum Mode: Sendable {
        case accept
        /// Answers the next `times` inserts with `status` and `body`, then accepts.
        case fail(times: Int, status: Int, body: String)
        case refuse(body: String)
    }

    struct State {
        var rows: [String: [(node: String, id: UInt64, line: String)]] = [:]
        var modes: [String: Mode] = [:]
        var statements: [String] = []
        var insertsAnswered = 0
        var schemaVersion = "1"
    }

    let state = Locked(State())
    private let server: HTTPServer
    let port: UInt16

    private init() throws {
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.accessLog = nil
        server = HTTPServer(configuration: configuration, handler: Handler(state: state))
        port = try server.start()
    }

    static func start() throws -> ClickHouseStandIn { try ClickHouseStandIn() }

    func stop() {
        server.shutdown()
        server.waitUntilStopped()
    }

    var url: String { "http://127.0.0.1:\(port)/attribution" }

    func set(_ table: String, _ mode: Mode) { state.withLock { $0.modes[table] = mode } }

    /// Rows of `table` counted once per (node, id).
    func distinctRows(_ table: String) -> Int {
        state.withLock { s in Set((s.rows[table] ?? []).map { "\($0.node)/\($0.id)" }).count }
    }

    func rows(_ table: String) -> [(node: String, id: UInt64, line: String)] { state.withLock { $0.rows[table] ?? [] } }

    private struct Handler: HTTPHandler {
    let state: Locked<State>

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        let query = request.queryItems.first { $0.name == "query" }?.value
        let statement = query ?? String(decoding: request.body, as: UTF8.self)
        let answer: HTTPResponse = state.withLock { s in
            s.statements.append(statement)
            if statement.hasPrefix("SELECT max(version)") { return .text(200, s.schemaVersion + "\n") }
            if statement.contains("FROM system.mutations") { return .text(200, "0\n") }
            // The rows of counts a node has from a batch on: what the exporter asks before its first batch.
            if statement.hasPrefix("SELECT count() FROM attribution."), let table = statement.split(separator: " ").dropFirst(3).first,
               let node = statement.split(separator: "'").dropFirst().first,
               let first = statement.split(separator: " ").last(where: { UInt64($0) != nil }).flatMap({ UInt64($0) }) {
                let name = String(table.dropFirst("attribution.".count))
                let n = Set((s.rows[name] ?? []).filter { $0.node == node && $0.id >= first }.map(\.id)).count
                return .text(200, "\(n)\n")
            }
            guard let query, query.hasPrefix("INSERT INTO attribution."), query.hasSuffix(" FORMAT JSONEachRow") else {
                return .text(200, "")
            }
            let table = String(query.dropFirst("INSERT INTO attribution.".count).dropLast(" FORMAT JSONEachRow".count))
            s.insertsAnswered += 1
            switch s.modes[table] ?? .accept {
            case .refuse(let body): return .text(500, body)
            case .fail(let times, let status, let body) where times > 0:
                s.modes[table] = .fail(times: times - 1, status: status, body: body)
                return .text(status, body)
            default:
                for line in request.body.split(separator: UInt8(ascii: "\n")) {
                    // A record's key is its id; a row of counts is named by its batch's first record.
                    guard case .object(let members)? = try? JSONParser().parse(Array(line)),
                          case .string(let node)? = members.first(where: { $0.key == "node" })?.value,
                          case .number(let id)? = members.first(where: { $0.key == "id" || $0.key == "batch_first_id" })?.value,
                          let number = UInt64(id) else {
                        return .text(500, "Code: 27, e.displayText() = DB::Exception: Cannot parse input")
                    }
                    s.rows[table, default: []].append((node, number, String(decoding: line, as: UTF8.self)))
                }
                return .text(200, "")
            }
        }
        responder.respond(answer)
    }
    }
}

/// A consumer's turns, as its follower reports them: a test waits for the next turn rather than
/// polling a timer, and looks again at what the turn changed.
final class Turns: Sendable {
    private let signal = DispatchSemaphore(value: 0)

    var observe: @Sendable (LogTurn) -> Void { { _ in self.signal.signal() } }

    /// Waits turn after turn until `condition` holds, for at most `seconds`.
    func until(within seconds: Double = 60, _ condition: () -> Bool) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while !condition() {
            guard DispatchTime.now() < deadline, signal.wait(timeout: deadline) == .success else { return condition() }
        }
        return true
    }
}
