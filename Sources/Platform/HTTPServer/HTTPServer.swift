import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 server: one event-loop thread over non-blocking sockets.
///
/// ```swift
/// let server = HTTPServer(configuration: config, handler: app)
/// let port = try server.start()
/// ...
/// server.shutdown()          // stop accepting, finish in-flight requests
/// server.waitUntilStopped()
/// ```
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    private let handler: any HTTPHandler
    /// The loop once it runs, its port, and whether a turn was asked for before it ran.
    private let state = Locked<(loop: EventLoop?, port: UInt16?, turnOwed: Bool)>((nil, nil, false))
    private let stopped = DispatchGroup()
    /// Every answer's status, counted as it is sent.
    public let responses: ResponseCounts

    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler, responses: ResponseCounts = ResponseCounts()) {
        self.responses = responses
        self.configuration = configuration
        self.handler = handler
    }

    /// Binds, starts the loop thread, and returns the bound port.
    @discardableResult
    public func start() throws -> UInt16 {
        signal(SIGPIPE, SIG_IGN)
        let (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port,
                                                 backlog: configuration.backlog)
        let loop = try EventLoop(configuration: configuration, handler: handler, listener: listener, responses: responses)
        // Published only once its thread runs: nothing reaches the loop from another thread
        // before the loop knows which thread is its own.
        let running = DispatchSemaphore(value: 0)
        stopped.startThread(named: "http-event-loop", stackSize: 4 << 20) { loop.run(started: { running.signal() }) }
        running.wait()
        let owed = state.withLock { s -> Bool in
            defer { s = (loop, port, false) }
            return s.turnOwed
        }
        if owed { loop.requestTurn() }
        return port
    }

    /// The bound port, once started.
    public var port: UInt16? { state.withLock { $0.port } }

    /// Stops accepting, lets in-flight requests finish (up to the grace period), then stops. Returns at once.
    public func shutdown() {
        state.withLock { $0.loop }?.beginShutdown()
    }

    /// Makes the loop turn once more, so that the handler's `endTurn` runs: for work a thread of
    /// the handler's own finished outside any request. Asked before the loop runs (a thread the
    /// application started first), the turn is taken as soon as it does.
    public func requestTurn() {
        state.withLock { s -> EventLoop? in
            if s.loop == nil { s.turnOwed = true }
            return s.loop
        }?.requestTurn()
    }

    /// Hands `request` to the handler on the loop's thread, as if it had come off a socket, and
    /// waits for its answer: the same steps as a connection's (an answer given during `endTurn`
    /// is held until it returns), without the bytes. Nil if the answer was withdrawn, or the
    /// server is not running. For tests of what a handler answers, and tools in process.
    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        guard let loop = state.withLock({ $0.loop }) else { return nil }
        let answer = Locked<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        guard loop.inject(InProcessRequest(request: request, deliver: { response in
            answer.withLock { $0 = response }
            done.signal()
        })) else { return nil }
        done.wait()
        return answer.withLock { $0 }
    }

    /// Blocks until the loop has stopped.
    public func waitUntilStopped() {
        stopped.wait()
    }
}
