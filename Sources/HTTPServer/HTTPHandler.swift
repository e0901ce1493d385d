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
    func finishTurn()
}

extension HTTPHandler {
    public func finishTurn() {}
}

/// Answers one request, once, from any thread. Responses on a connection go out in request order
/// whatever order they are completed in.
public struct HTTPResponder: Sendable {
    let loop: EventLoop
    let fd: Int32
    let generation: UInt64
    let sequence: UInt64

    public func respond(_ response: HTTPResponse) {
        loop.complete(Completion(fd: fd, generation: generation, sequence: sequence, response: response))
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
