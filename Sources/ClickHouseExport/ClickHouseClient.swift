import Dispatch
import Foundation
import Locking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs statements on ClickHouse's HTTP interface with Foundation's URLSession, one at a time,
/// waiting for each: it is called from the exporter's own thread, never the event loop.
public final class ClickHouseClient: Sendable {
    public let target: ClickHouseTarget
    private let session: URLSession
    private let authorization: String?
    /// Set by `stop`: a task asked of an invalidated session is a fatal error in Foundation, so
    /// tasks are made under this lock and never after it is set.
    private let stopped = Locked(false)

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

    public init(target: ClickHouseTarget, timeout: Double = 30) {
        self.target = target
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

    /// `query` alone in the body, or in the URL with `body` as its data (an INSERT's rows).
    public func run(_ query: String, body: [UInt8]? = nil) -> Outcome {
        var components = URLComponents(url: target.server, resolvingAgainstBaseURL: false)
        if body != nil {
            components?.queryItems = [URLQueryItem(name: "query", value: query)]
        }
        guard let url = components?.url else { return .refused("the statement cannot be put in a URL") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = body.map { Data($0) } ?? Data(query.utf8)
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let answered = DispatchSemaphore(value: 0)
        let outcome = Locked<Outcome>(.unavailable("no answer"))
        let session = self.session
        let task = stopped.withLock { stopped -> URLSessionDataTask? in
            guard !stopped else { return nil }
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

    public func stop() {
        stopped.withLock { stopped in
            stopped = true
            session.invalidateAndCancel()
        }
    }
}
