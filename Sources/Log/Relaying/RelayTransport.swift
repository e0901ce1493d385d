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

/// How copies leave: URLSession in production (`URLSessionRelayTransport`), a script in tests.
/// `post` blocks its caller, a destination's own thread, for at most the transport's time-out.
public protocol RelayTransport: Sendable {
    func post(_ request: RelayRequest) -> RelayExchange
    /// Several at once, the answers in the requests' order; by default one after another.
    func post(all requests: [RelayRequest]) -> [RelayExchange]
    /// Ends what is in flight at once (a stop).
    func cancelAll()
    /// Lets go of everything the transport holds (its session, connections); nothing is sent after.
    func invalidate()
}

extension RelayTransport {
    public func post(all requests: [RelayRequest]) -> [RelayExchange] { requests.map(post) }
    public func invalidate() {}
}
