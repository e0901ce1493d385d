/// How the server listens and what it tolerates from clients.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric address to bind: `127.0.0.1`, `0.0.0.0`, `::`.
    public var host = "127.0.0.1"
    /// 0 picks a free port; `HTTPServer.start()` returns the one bound.
    public var port: UInt16 = 8080
    /// Connections the kernel completes before the loop accepts them. Deep, so that a flood
    /// reconnecting as fast as it is evicted does not fill the queue: a full queue drops a
    /// newcomer's handshake, and its client waits a whole second to send it again. Linux caps it
    /// at `net.core.somaxconn` (4096 by default since 5.4).
    public var backlog: Int32 = 4096
    public var limits = HTTPLimits()
    /// Connections past this are answered 503 and closed at once, so a flood of idle sockets
    /// cannot exhaust descriptors.
    public var maxConnections = 4096
    /// A request must arrive whole within this many seconds of its first byte. Dribbling bytes
    /// does not extend it, which is what stops slowloris.
    public var requestTimeout: Double = 10
    /// A keep-alive connection with nothing in flight is closed after this many seconds.
    public var idleTimeout: Double = 30
    /// A client that stops reading its responses is dropped after this many seconds.
    public var writeTimeout: Double = 30
    /// Requests read ahead on one connection while earlier ones await their response.
    public var maxPipelinedRequests = 64
    /// How often the loop, when nothing happens, wakes to close connections past their deadline.
    public var timeoutCheckInterval: Double = 0.25
    /// On shutdown, in-flight requests get this long to finish before connections are cut.
    public var shutdownGracePeriod: Double = 10
    /// Where one JSON line per request goes; nil turns the access log off. A `LineWriter` never
    /// blocks the loop: a reader that stalls costs log lines, not requests.
    public var accessLog: LineWriter? = nil

    public init() {}
}
