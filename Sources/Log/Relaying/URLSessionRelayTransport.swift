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
    }

    /// `timeout`: whole seconds, at least one (Foundation on Linux drops a time-out's fraction,
    /// and takes 0.5 s for none at all, failing every attempt at once). `connections`: at most
    /// this many at once to one destination (a delivery sends as many copies at once).
    public init(timeout: Double, connections: Int = 4) {
        let timeout = max(1, timeout.rounded(.up))
        self.timeout = timeout
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

    public func post(_ request: RelayRequest) -> RelayExchange { post(all: [request])[0] }

    /// All at once, over at most `connections` connections; each within `timeout` of the start.
    public func post(all requests: [RelayRequest]) -> [RelayExchange] {
        let started = requests.enumerated().map { start($0.element, on: sessions[$0.offset % sessions.count]) }
        // The whole attempt within `timeout`: the session's own time-out is between two pieces
        // of the answer, which a destination that dribbles can keep resetting.
        let deadline = DispatchTime.now() + timeout
        return started.map { attempt in
            guard let (task, exchange) = attempt.task else { return .failed(attempt.refusal ?? "not sent") }
            if exchange.done.wait(timeout: deadline) == .timedOut {
                task.cancel()
                _ = exchange.done.wait(timeout: .now() + 5)
            }
            tasks.withLock { $0[ObjectIdentifier(task)] = nil }
            let answer = exchange.answer.withLock { $0 }
            if let status = answer.status {
                return .answered(status: status, retryAfter: answer.retryAfter, bodyStart: String(decoding: answer.body, as: UTF8.self))
            }
            return .failed(answer.error ?? "no answer")
        }
    }

    private struct Attempt {
        var task: (URLSessionDataTask, Exchange)?
        var refusal: String?
    }

    private func start(_ request: RelayRequest, on session: URLSession) -> Attempt {
        guard let url = URL(string: request.url) else { return Attempt(refusal: "not a URL: \(request.url)") }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "POST"
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = Data(request.body)
        let task = session.dataTask(with: urlRequest)
        let exchange = Exchange()
        tasks.withLock { $0[ObjectIdentifier(task)] = exchange }
        task.resume()
        return Attempt(task: (task, exchange))
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
        // The connect guard's answer to the tunnel's CONNECT, or an interim 1xx: the
        // destination's own answer comes next.
        if http.statusCode < 200 || http.value(forHTTPHeaderField: RelayConnectGuard.tunnelHeader) != nil {
            return completionHandler(.allow)
        }
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
            exchange.answer.withLock { a in if a.status == nil { a.error = Self.describe(error) } }
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
