import Locking

/// What runs, in one list: started in its order, stopped in the reverse one, so that a service
/// is stopped only after every service started after it (those that may use it) has stopped.
/// As Hummingbird's `ServiceGroup`, the order is declared once, where the services are listed.
public final class ServiceGroup: Sendable {
    public let services: [Service]
    private struct State {
        var started = 0
        var stopping = false
    }
    private let state = Locked(State())
    /// Told of each service as it starts, fails to start or stops (tests watch the order).
    private let observe: @Sendable (_ name: String, _ event: Event) -> Void

    public enum Event: Sendable, Equatable { case started, stopped, failed }

    /// `start` after `stop`: nothing is started.
    public struct Stopped: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the services were stopped before they started" }
    }

    public init(_ services: [Service], observe: @escaping @Sendable (_ name: String, _ event: Event) -> Void = { _, _ in }) {
        self.services = services
        self.observe = observe
    }

    /// Starts each in turn. When one throws, those already started are stopped, in reverse, and
    /// the error is rethrown. After a `stop`, it starts nothing and throws `Stopped`.
    public func start() throws {
        for (i, service) in services.enumerated() {
            guard !state.withLock({ $0.stopping }) else { throw Stopped() }
            do {
                try service.start()
            } catch {
                observe(service.name, .failed)
                stop()
                throw error
            }
            state.withLock { $0.started = i + 1 }
            observe(service.name, .started)
        }
    }

    /// Stops what was started, last first, once `start` has returned (or thrown). Once only: a
    /// second call returns at once.
    public func stop() {
        let started = state.withLock { s -> Int? in
            if s.stopping && s.started == 0 { return nil }
            s.stopping = true
            defer { s.started = 0 }
            return s.started
        }
        guard let started else { return }
        for service in services.prefix(started).reversed() {
            service.stop()
            observe(service.name, .stopped)
        }
    }
}
