import Dispatch
import Foundation
import Locking
import RawHTTPClient
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs statements on ClickHouse's HTTP interface, one at a time, waiting for each: it is called
/// from the exporter's own thread and the cluster summary's worker, never the event loop.
///
/// An `http://` server is spoken to over a socket of the client's own (`RawHTTPClient`): a batch
/// of rows is written from its buffer as it is, where URLSession on Linux copies it twice and
/// hands it to libcurl 16 KB at a time, which at full ingest cost the node as much CPU as building
/// the rows did (docs/PERFORMANCE.md, "ClickHouse export"). `https://` (a ClickHouse Cloud, say)
/// goes through URLSession, which brings TLS.
public final class ClickHouseClient: Sendable {
    public let target: ClickHouseTarget
    private let timeout: Double
    private let session: URLSession
    private let authorization: String?
    /// Set by `stop`, with the connections in flight, which it ends. A task asked of an
    /// invalidated session is a fatal error in Foundation, so tasks are made under this lock and
    /// never after it is set.
    private let state = Locked(State())

    private struct State: @unchecked Sendable {
        var stopped = false
        /// Only touched under the lock; `cancel` is a `shutdown(2)`, safe from any thread.
        var connections: [ObjectIdentifier: RawHTTPClient] = [:]
    }

    /// What became of a statement.
    public enum Outcome: Sendable, Equatable {
        case done(String)
        /// ClickHouse understood and said no: sending the same again gets the same answer.
        case refused(String)
        /// The table or database is missing: create the schema, then send again.
        case missingTable(String)
        /// No answer, a time-out, a server error, a wrong password: try again later.
        case unavailable(String)
    }

    /// `timeout` bounds each wait for the server, and a statement as a whole ends within three times that.
    public init(target: ClickHouseTarget, timeout: Double = 30) {
        self.target = target
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 1
        session = URLSession(configuration: configuration)
        authorization = target.credentials.map { "Basic " + Data("\($0.user):\($0.password)".utf8).base64EncodedString() }
    }

    /// The largest answer read: an insert's is a few bytes, a cluster summary's rows are
    /// thousands, and a year's at most about a million short lines.
    static let maxResponseBytes = 128 << 20

    /// `query` alone in the body, or in the URL with `body` as its data (an INSERT's rows).
    public func run(_ query: String, body: [UInt8]? = nil) -> Outcome {
        var components = URLComponents(url: target.server, resolvingAgainstBaseURL: false)
        if body != nil {
            components?.queryItems = [URLQueryItem(name: "query", value: query)]
        }
        guard let components, let url = components.url else { return .refused("the statement cannot be put in a URL") }
        if components.scheme == "http" {
            return post(components, body: body ?? Array(query.utf8))
        }
        return postWithURLSession(url, body: body.map { Data($0) } ?? Data(query.utf8))
    }

    private func post(_ url: URLComponents, body: [UInt8]) -> Outcome {
        guard var host = url.host, let port = UInt16(exactly: url.port ?? 80) else { return .refused("no host and port in \(target)") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let connection: RawHTTPClient
        do {
            // Connecting is not yet a connection `stop` can end: kept short, as a ClickHouse on the
            // network answers a connect in milliseconds or not at all.
            connection = try RawHTTPClient(port: port, host: host, timeout: timeout, connectTimeout: min(timeout, 5))
        } catch {
            return .unavailable("\(error)")
        }
        let key = ObjectIdentifier(connection)
        guard state.withLock({ state -> Bool in
            guard !state.stopped else { return false }
            state.connections[key] = connection
            return true
        }) else { return .unavailable("the export is stopping") }
        defer { state.withLock { _ = $0.connections.removeValue(forKey: key) } }
        connection.deadline = DispatchTime.now().uptimeNanoseconds + UInt64(min(max(timeout * 2, 0), 86_400) * 1e9)
        connection.maxResponseBytes = Self.maxResponseBytes
        connection.resetIsEnd = false
        let path = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
        var head = "POST \(path)\(url.percentEncodedQuery.map { "?" + $0 } ?? "") HTTP/1.1\r\n"
        head += "Host: \(url.percentEncodedHost ?? host)\(url.port.map { ":\($0)" } ?? "")\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n"
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        head += "\r\n"
        do {
            try connection.send(head)
            try connection.send(body)
            var response = try connection.readResponse()
            // A proxy's `100 Continue` is not the answer.
            for _ in 0..<8 where (100..<200).contains(response.status) { response = try connection.readResponse() }
            // Ended by `stop`: an answer cut there may look whole.
            guard !state.withLock({ $0.stopped }) else { return .unavailable("the export is stopping") }
            return Self.outcome(status: response.status, body: response.bodyText)
        } catch {
            return .unavailable("\(error)")
        }
    }

    private func postWithURLSession(_ url: URL, body: Data) -> Outcome {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let answered = DispatchSemaphore(value: 0)
        let outcome = Locked<Outcome>(.unavailable("no answer"))
        let session = self.session
        let task = state.withLock { state -> URLSessionDataTask? in
            guard !state.stopped else { return nil }
            let task = session.dataTask(with: request) { data, response, error in
                let text = data.map { String(decoding: $0, as: UTF8.self) } ?? ""
                if let error {
                    outcome.withLock { $0 = .unavailable("\(error.localizedDescription)") }
                } else if let http = response as? HTTPURLResponse {
                    outcome.withLock { $0 = Self.outcome(status: http.statusCode, body: text) }
                } else {
                    outcome.withLock { $0 = .unavailable("no HTTP answer") }
                }
                answered.signal()
            }
            task.resume()
            return task
        }
        guard task != nil else { return .unavailable("the export is stopping") }
        answered.wait()
        return outcome.withLock { $0 }
    }

    /// ClickHouse 18.16 answers most errors 500, later versions 4xx; its `Code: N` tells which
    /// failures are the data's (a retry cannot help) and which the server's.
    static func outcome(status: Int, body: String) -> Outcome {
        if (200..<300).contains(status) { return .done(body) }
        let message = String(body.trimmingCharacters(in: .whitespacesAndNewlines).prefix(500))
        let code = errorCode(body)
        if let code, missingTableCodes.contains(code) { return .missingTable(message) }
        if let code, refusedDataCodes.contains(code) { return .refused(message) }
        // Authentication (401, 403, codes 192, 193, 516) is the operator's to fix: keep trying.
        if status == 400 || status == 413 || status == 422 { return .refused(message) }
        return .unavailable("HTTP \(status): \(message)")
    }

    /// UNKNOWN_TABLE, UNKNOWN_DATABASE.
    static let missingTableCodes: Set<Int> = [60, 81]
    /// The data or the statement is wrong: parse errors, type mismatches, unknown columns, syntax.
    static let refusedDataCodes: Set<Int> = [6, 16, 26, 27, 38, 41, 43, 44, 47, 53, 62, 69, 70, 72, 117, 131, 349]

    static func errorCode(_ body: String) -> Int? {
        guard let range = body.range(of: "Code: ") else { return nil }
        return Int(body[range.upperBound...].prefix(while: { $0.isNumber }))
    }

    /// Ends every statement in flight and refuses new ones.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            for connection in state.connections.values { connection.cancel() }
            session.invalidateAndCancel()
        }
    }
}
