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
    private let state = Locked<(loop: EventLoop?, port: UInt16?)>((nil, nil))
    private let stopped = DispatchGroup()

    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// Binds, starts the loop thread, and returns the bound port.
    @discardableResult
    public func start() throws -> UInt16 {
        signal(SIGPIPE, SIG_IGN)
        let (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port,
                                                 backlog: configuration.backlog)
        let loop = try EventLoop(configuration: configuration, handler: handler, listener: listener)
        state.withLock { $0 = (loop, port) }
        stopped.startThread(named: "http-event-loop", stackSize: 4 << 20) { loop.run() }
        return port
    }

    /// The bound port, once started.
    public var port: UInt16? { state.withLock { $0.port } }

    /// Stops accepting, lets in-flight requests finish (up to the grace period), then stops. Returns at once.
    public func shutdown() {
        state.withLock { $0.loop }?.beginShutdown()
    }

    /// Makes the loop turn once more, so that the handler's `finishTurn` runs: for work a thread
    /// of the handler's own finished outside any request (it queued something to commit).
    public func wakeForDeferredWork() {
        state.withLock { $0.loop }?.wakeForDeferredWork()
    }

    /// Blocks until the loop has stopped.
    public func waitUntilStopped() {
        stopped.wait()
    }
}
