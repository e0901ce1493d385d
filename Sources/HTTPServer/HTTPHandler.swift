/// What the application plugs into the server.
///
/// `handle` runs on the event-loop thread, so it must not block: do quick work inline, and either
/// hand slow work to another thread or leave it for `finishTurn`, answering through the responder
/// when it is done.
public protocol HTTPHandler: Sendable {
    func handle(_ request: HTTPRequest, responder: HTTPResponder)

    /// Called on the event-loop thread at the end of every loop turn, after every request the turn
    /// read was given to `handle`: the place for work that is cheaper done once for many requests
    /// (the endpoint writes the turn's reports here with one disk flush). Every connection waits
    /// while it runs, so it should be short.
    ///
    /// Answers given while it runs, on the loop's thread, are held and sent once it returns, so it
    /// may give an answer before the work the answer reports on is done (the endpoint prepares a
    /// report's acknowledgement while the report is being flushed), and withdraw the answer with
    /// `HTTPResponder.withdraw()` if that work fails.
    func finishTurn()

    /// True while `finishTurn` has work left that it put off to keep a turn short: the loop then
    /// turns again at once instead of waiting for a socket to become ready.
    var hasDeferredWork: Bool { get }
}

extension HTTPHandler {
    public func finishTurn() {}
    public var hasDeferredWork: Bool { false }
}

/// Answers one request, once, from any thread. Responses on a connection go out in request order
/// whatever order they are completed in.
public struct HTTPResponder: Sendable {
    private enum Destination {
        /// A connection of the event loop's.
        case connection(EventLoop, fd: Int32, generation: UInt64, sequence: UInt64)
        /// Whoever asked without a socket (`Router.respond(to:)`, tests).
        case closure(@Sendable (HTTPResponse) -> Void, wake: @Sendable () -> Void)
    }
    private let destination: Destination

    init(loop: EventLoop, fd: Int32, generation: UInt64, sequence: UInt64) {
        destination = .connection(loop, fd: fd, generation: generation, sequence: sequence)
    }

    /// A responder that hands the answer to `deliver`, for requests that come from no socket;
    /// `wake` stands for the loop's next turn.
    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void, wake: @escaping @Sendable () -> Void = {}) {
        destination = .closure(deliver, wake: wake)
    }

    public func respond(_ response: HTTPResponse) {
        switch destination {
        case .connection(let loop, let fd, let generation, let sequence):
            loop.complete(Completion(fd: fd, generation: generation, sequence: sequence, response: response))
        case .closure(let deliver, _):
            deliver(response)
        }
    }

    /// Whether answers given through this responder during the handler's `finishTurn`, on the
    /// loop's thread, are held until it returns and can still be withdrawn: true for a connection's.
    public var holdsAnswersAtTurnEnd: Bool {
        if case .connection = destination { return true }
        return false
    }

    /// On the loop's thread, during `finishTurn`: the answer already given must not leave after all
    /// (what it acknowledged failed). Its connection is closed instead of sending it; its
    /// access-log line is kept, marked `withdrawn`. Does nothing if no answer is being held.
    public func withdraw() {
        if case .connection(let loop, let fd, let generation, let sequence) = destination {
            loop.withdraw(fd: fd, generation: generation, sequence: sequence)
        }
    }

    /// From any thread: makes the event loop that owns the request turn once more, so that its
    /// handler's `finishTurn` takes up work finished elsewhere (a signature checked on a worker
    /// thread) even if no socket becomes ready meanwhile.
    public func wakeLoop() {
        switch destination {
        case .connection(let loop, _, _, _):
            loop.wakeForDeferredWork()
        case .closure(_, let wake):
            wake()
        }
    }
}

/// A handler from a closure, for tests and small servers.
public struct ClosureHandler: HTTPHandler {
    let body: @Sendable (HTTPRequest, HTTPResponder) -> Void

    public init(_ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) {
        self.body = body
    }

    public func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        body(request, responder)
    }
}
