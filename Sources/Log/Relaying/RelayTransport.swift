/// One attempt to hand a copy to a destination.
public struct RelayRequest: Sendable {
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(url: String, headers: [(String, String)], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What came back: an answer (its status, `Retry-After`, and the start of its body, no more),
/// or no answer at all, with why.
public enum RelayExchange: Sendable, Equatable {
    case answered(status: Int, retryAfter: String?, bodyStart: String)
    case failed(String)
}

/// An attempt started (`RelayTransport.begin`), whose answer `finish` waits for.
public final class RelayAttempt: @unchecked Sendable {
    public let request: RelayRequest
    /// The transport's own state of the attempt; set once, in `begin`, before it is shared.
    public let handle: AnyObject?

    public init(request: RelayRequest, handle: AnyObject? = nil) {
        self.request = request
        self.handle = handle
    }
}

/// How copies leave: URLSession in production (`URLSessionRelayTransport`), a script in tests.
/// `post` and `finish` block their caller, a destination's own thread, for at most the
/// transport's time-out from the attempt's start.
public protocol RelayTransport: Sendable {
    func post(_ request: RelayRequest) -> RelayExchange
    /// Starts an attempt and returns at once; by default nothing happens until `finish`.
    func begin(_ request: RelayRequest) -> RelayAttempt
    /// The attempt's answer; by default, `post` of its request.
    func finish(_ attempt: RelayAttempt) -> RelayExchange
    /// Ends what is in flight at once (a stop).
    func cancelAll()
    /// Lets go of everything the transport holds (its session, connections); nothing is sent after.
    func invalidate()
}

extension RelayTransport {
    public func begin(_ request: RelayRequest) -> RelayAttempt { RelayAttempt(request: request) }
    public func finish(_ attempt: RelayAttempt) -> RelayExchange { post(attempt.request) }
    public func invalidate() {}
}
