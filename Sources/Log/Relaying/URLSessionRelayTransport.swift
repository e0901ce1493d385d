import Dispatch
import Foundation
import Locking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends copies with Foundation's URLSession: certificates checked against the system's trust
/// store (a private CA, for an internal collector, is added there: `update-ca-certificates`),
/// no cookie, no cache, no redirect followed (a 3xx is the answer), and of the answer's body no
/// more than its start is kept: a destination that answers with 50 MB costs a few hundred bytes.
public final class URLSessionRelayTransport: NSObject, RelayTransport, URLSessionDataDelegate, @unchecked Sendable {
    /// Bytes of an answer's body kept, for a refusal's record.
    public static let bodyStart = 512

    /// Set once in `init` (it needs `self` as its delegate), before the transport is shared.
    private var sessions: [URLSession] = []
    private let timeout: Double
    /// What each task has received so far, by task; touched on the sessions' delegate queues
    /// and by `post` under the lock.
    private let tasks = Locked<[ObjectIdentifier: Exchange]>([:])
    /// Tasks in flight on each session.
    private let busy: Locked<[Int]>

    /// One attempt's answer as the delegate receives it: written on the session's queue, read by
    /// `post` once `done` is signalled (under a lock, which ThreadSanitizer sees).
    private final class Exchange: Sendable {
        struct Answer {
            var status: Int?
            var retryAfter: String?
            var body: [UInt8] = []
            var error: String?
        }
        let answer = Locked(Answer())
        let done = DispatchSemaphore(value: 0)
        /// The session it runs on, and when its whole attempt must have ended.
        let session: Int
        let deadline: DispatchTime
        init(session: Int, deadline: DispatchTime) {
            self.session = session
            self.deadline = deadline
        }
    }

    /// `timeout`: whole seconds, at least one (Foundation on Linux drops a time-out's fraction,
    /// and takes 0.5 s for none at all, failing every attempt at once). `connections`: at most
    /// this many at once to one destination (a delivery sends as many copies at once).
    public init(timeout: Double, connections: Int = 4) {
        let timeout = max(1, timeout.rounded(.up))
        self.timeout = timeout
        busy = Locked(Array(repeating: 0, count: max(1, connections)))
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        // A session for each connection: Foundation on Linux runs each session's transfers on
        // serial queues of its own, so that one session for all would use a core at most.
        for _ in 0..<max(1, connections) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            sessions.append(URLSession(configuration: configuration, delegate: self, delegateQueue: queue))
        }
    }

    public func post(_ request: RelayRequest) -> RelayExchange { finish(begin(request)) }

    /// Starts the task on the session with the fewest in flight.
    public func begin(_ request: RelayRequest) -> RelayAttempt {
        guard let url = URL(string: request.url) else { return RelayAttempt(request: request) }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "POST"
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = Data(request.body)
        let index = busy.withLock { busy -> Int in
            let index = busy.indices.min { busy[$0] < busy[$1] } ?? 0
            busy[index] += 1
            return index
        }
        let task = sessions[index].dataTask(with: urlRequest)
        let exchange = Exchange(session: index, deadline: .now() + timeout)
        tasks.withLock { $0[ObjectIdentifier(task)] = exchange }
        task.resume()
        return RelayAttempt(request: request, handle: Started(task: task, exchange: exchange))
    }

    /// Waits for the answer, within `timeout` of the attempt's start: the session's own time-out
    /// is between two pieces of the answer, which a destination that dribbles can keep resetting.
    public func finish(_ attempt: RelayAttempt) -> RelayExchange {
        guard let started = attempt.handle as? Started else { return .failed("not a URL: \(attempt.request.url)") }
        let (task, exchange) = (started.task, started.exchange)
        if exchange.done.wait(timeout: exchange.deadline) == .timedOut {
            task.cancel()
            _ = exchange.done.wait(timeout: .now() + 5)
        }
        tasks.withLock { $0[ObjectIdentifier(task)] = nil }
        busy.withLock { $0[exchange.session] -= 1 }
        let answer = exchange.answer.withLock { $0 }
        if let status = answer.status {
            return .answered(status: status, retryAfter: answer.retryAfter, bodyStart: String(decoding: answer.body, as: UTF8.self))
        }
        return .failed(answer.error ?? "no answer")
    }

    private final class Started: @unchecked Sendable {
        let task: URLSessionDataTask
        let exchange: Exchange
        init(task: URLSessionDataTask, exchange: Exchange) {
            self.task = task
            self.exchange = exchange
        }
    }

    public func cancelAll() {
        for session in sessions { session.getAllTasks { tasks in tasks.forEach { $0.cancel() } } }
    }

    /// The session holds its delegate, this transport, until it is invalidated: without this,
    /// every delivery replaced would leave a session, its queue and its connections behind.
    public func invalidate() { sessions.forEach { $0.invalidateAndCancel() } }

    // MARK: - URLSessionDataDelegate, on the session's queue

    public func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                           newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        // Never followed: the 3xx itself is the answer.
        completionHandler(nil)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                           completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let exchange = tasks.withLock({ $0[ObjectIdentifier(dataTask)] }), let http = response as? HTTPURLResponse else {
            return completionHandler(.cancel)
        }
        // The connect guard's answer to the tunnel's CONNECT: past its 200 (or an interim 1xx)
        // the destination's own answer comes next; its refusal is no answer of the destination's.
        if let tunnel = http.value(forHTTPHeaderField: RelayConnectGuard.tunnelHeader) {
            guard tunnel == "open", http.statusCode == 200 else {
                exchange.answer.withLock { $0.error = "the connect check refused the connection (HTTP \(http.statusCode)): relay_connect_refused in the event log says why" }
                return completionHandler(.cancel)
            }
            return completionHandler(.allow)
        }
        if http.statusCode < 200 { return completionHandler(.allow) }
        exchange.answer.withLock { a in
            a.status = http.statusCode
            a.retryAfter = http.value(forHTTPHeaderField: "Retry-After")
        }
        // A delivered copy needs nothing of the body; a refusal, its start.
        completionHandler((200...299).contains(http.statusCode) ? .cancel : .allow)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = tasks.withLock({ $0[ObjectIdentifier(dataTask)] }) else { return }
        let full = exchange.answer.withLock { a -> Bool in
            let room = Self.bodyStart - a.body.count
            if room > 0 { a.body.append(contentsOf: data.prefix(room)) }
            return a.body.count >= Self.bodyStart
        }
        if full { dataTask.cancel() }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let exchange = tasks.withLock({ $0[ObjectIdentifier(task)] }) else { return }
        if let error {
            exchange.answer.withLock { a in if a.status == nil, a.error == nil { a.error = Self.describe(error) } }
        }
        exchange.done.signal()
    }

    static func describe(_ error: Error) -> String {
        let nsError = error as NSError
        switch nsError.code {
        case NSURLErrorTimedOut: return "timed out"
        case NSURLErrorCannotConnectToHost: return "connection refused"
        case NSURLErrorNetworkConnectionLost: return "connection reset"
        case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return "the name does not resolve"
        case NSURLErrorServerCertificateUntrusted, NSURLErrorServerCertificateHasBadDate, NSURLErrorServerCertificateHasUnknownRoot,
             NSURLErrorServerCertificateNotYetValid, NSURLErrorSecureConnectionFailed:
            return "TLS failed: \(nsError.localizedDescription)"
        case NSURLErrorCancelled: return "cancelled"
        default:
            // libcurl's TLS failures come without a code of their own: "SSL certificate problem: …";
            // nor do the connect guard's refusals ("… 403 from proxy after CONNECT").
            let text = nsError.localizedDescription
            if text.contains("CONNECT") || text.contains("proxy") {
                return text.contains("403") ? "the connect check refused the address the name resolved to (relay_connect_refused in the event log)"
                    : "no address of the destination answered (through the connect check): " + text
            }
            return text.contains("SSL") || text.contains("certificate") ? "TLS failed: " + text : text
        }
    }
}
