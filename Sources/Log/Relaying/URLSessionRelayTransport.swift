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

    private var session: URLSession!
    private let timeout: Double
    /// What each task has received so far, by task id; touched on the session's delegate queue
    /// and by `post` under the lock.
    private let tasks = Locked<[Int: Exchange]>([:])

    private final class Exchange: @unchecked Sendable {
        var status: Int?
        var retryAfter: String?
        var body: [UInt8] = []
        let done = DispatchSemaphore(value: 0)
        var error: String?
    }

    /// `timeout`: whole seconds, at least one (Foundation on Linux drops a time-out's fraction,
    /// and takes 0.5 s for none at all, failing every attempt at once). `connections`: at most
    /// this many at once to one destination.
    public init(timeout: Double, connections: Int = 2) {
        let timeout = max(1, timeout.rounded(.up))
        self.timeout = timeout
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    public func post(_ request: RelayRequest) -> RelayExchange {
        guard let url = URL(string: request.url) else { return .failed("not a URL: \(request.url)") }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "POST"
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = Data(request.body)
        let task = session.dataTask(with: urlRequest)
        let exchange = Exchange()
        tasks.withLock { $0[task.taskIdentifier] = exchange }
        task.resume()
        // The whole attempt within `timeout`: the session's own time-out is between two pieces
        // of the answer, which a destination that dribbles can keep resetting.
        if exchange.done.wait(timeout: .now() + timeout) == .timedOut {
            task.cancel()
            _ = exchange.done.wait(timeout: .now() + 5)
        }
        tasks.withLock { $0[task.taskIdentifier] = nil }
        if let status = exchange.status {
            return .answered(status: status, retryAfter: exchange.retryAfter,
                             bodyStart: String(decoding: exchange.body, as: UTF8.self))
        }
        return .failed(exchange.error ?? "no answer")
    }

    public func cancelAll() {
        session.getAllTasks { tasks in tasks.forEach { $0.cancel() } }
    }

    deinit { session.invalidateAndCancel() }

    // MARK: - URLSessionDataDelegate, on the session's queue

    public func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                           newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        // Never followed: the 3xx itself is the answer.
        completionHandler(nil)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                           completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let exchange = tasks.withLock({ $0[dataTask.taskIdentifier] }), let http = response as? HTTPURLResponse else {
            return completionHandler(.cancel)
        }
        exchange.status = http.statusCode
        exchange.retryAfter = http.value(forHTTPHeaderField: "Retry-After")
        // A delivered copy needs nothing of the body; a refusal, its start.
        completionHandler((200...299).contains(http.statusCode) ? .cancel : .allow)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = tasks.withLock({ $0[dataTask.taskIdentifier] }) else { return }
        let room = Self.bodyStart - exchange.body.count
        if room > 0 { exchange.body.append(contentsOf: data.prefix(room)) }
        if exchange.body.count >= Self.bodyStart { dataTask.cancel() }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let exchange = tasks.withLock({ $0[task.taskIdentifier] }) else { return }
        if let error, exchange.status == nil { exchange.error = Self.describe(error) }
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
            // libcurl's TLS failures come without a code of their own: "SSL certificate problem: …".
            let text = nsError.localizedDescription
            return text.contains("SSL") || text.contains("certificate") ? "TLS failed: " + text : text
        }
    }
}
