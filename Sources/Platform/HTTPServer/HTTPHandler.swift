/// What the application plugs into the server.
///
/// The server reads requests on one event-loop thread and calls `handle` for each, in the order
/// they came; the handler answers through the `HTTPResponder`, at once or later from any thread,
/// and a connection's answers leave in request order. One turn of the loop serves every socket
/// that is ready, then calls `endTurn`, where work that is cheaper done once for many requests
/// goes. Answers given while `endTurn` runs are held until it returns, so it may answer before
/// that work is over and `withdraw` an answer if the work then fails: the connection closes
/// instead of sending it. `endTurn` returns whether it left work for another turn, which then
/// comes at once; any thread may ask for a turn with `HTTPServer.requestTurn()`. Requests handed
/// to `HTTPServer.respond(to:)` take the same steps without a socket.
public protocol HTTPHandler: Sendable {
    /// On the loop's thread: must not block. Do quick work inline, hand slow work to another
    /// thread or leave it for `endTurn`, and answer through `responder` when it is done.
    func handle(_ request: HTTPRequest, responder: HTTPResponder)

    /// On the loop's thread, once per turn, after every request the turn read was given to
    /// `handle`. Every connection waits while it runs, so it should be short; it returns true
    /// when it put work off to the next turn.
    func endTurn() -> Bool
}

extension HTTPHandler {
    public func endTurn() -> Bool { false }
}

/// Answers one request, once, from any thread.
public struct HTTPResponder: Sendable {
    private let loop: EventLoop
    private let exchange: Exchange

    /// Which request of the loop's this answers.
    enum Exchange: Sendable, Equatable {
        /// A connection's: `generation` tells it from a later one that reuses its descriptor.
        case connection(fd: Int32, generation: UInt64, sequence: UInt64)
        /// One handed to `HTTPServer.respond(to:)`.
        case inProcess(UInt64)
    }

    init(loop: EventLoop, exchange: Exchange) {
        self.loop = loop
        self.exchange = exchange
    }

    public func respond(_ response: HTTPResponse) {
        loop.complete(Completion(exchange: exchange, response: response))
    }

    /// On the loop's thread, during `endTurn`: the answer already given must not leave after all.
    /// Its connection is closed instead of sending it, and its access-log line is kept, marked
    /// `withdrawn`. Does nothing if no answer is being held.
    public func withdraw() {
        loop.withdraw(exchange)
    }
}
