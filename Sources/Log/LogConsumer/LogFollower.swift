import Dispatch
import Locking
import Primitives

/// Runs one `LogConsumer` on a thread of its own, a turn after another, until stopped: at once
/// after a full batch, after `interval` when caught up, after the `RetrySchedule`'s wait when its
/// destination failed. Keeps what an operator reads about it: the last error and when, the
/// failures, the batches accepted. Its events are named after `events` (`export_failed`,
/// `export_resumed`): the first failure of a run is logged, the rest show in `/metrics` until a
/// batch is accepted again.
public final class LogFollower: Sendable {
    public struct Health: Sendable, Equatable {
        public var lastError: String?
        public var lastErrorAt: Timestamp?
        public var failuresInARow = 0
        public var failures = 0
        /// Batches the destination accepted.
        public var batches = 0
    }

    private struct State: Sendable {
        var health = Health()
        var stopping = false
    }

    public let thread: String
    private let priority: ThreadPriority
    private let events: String
    private let interval: Double
    private let retry: RetrySchedule
    private let clock: @Sendable () -> Timestamp
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let observer: (@Sendable (LogTurn) -> Void)?
    private let state = Locked(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let finished = DispatchGroup()

    /// `observer` sees every turn's outcome as it ends, before the wait that follows: for tests,
    /// which wait on it rather than poll.
    /// `priority`: how the thread competes for a core (`.background` for one that must yield to intake).
    public init(thread: String, events: String, interval: Double = 1, retry: RetrySchedule = RetrySchedule(), priority: ThreadPriority = .normal,
                clock: @escaping @Sendable () -> Timestamp,
                announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void,
                observer: (@Sendable (LogTurn) -> Void)? = nil) {
        self.thread = thread
        self.priority = priority
        self.events = events
        self.interval = interval
        self.retry = retry
        self.clock = clock
        self.announce = announce
        self.observer = observer
    }

    public func start(_ consumer: some LogConsumer) {
        finished.startThread(named: thread, priority: priority) { [self] in
            while !isStopping {
                let turn = consumer.turn(self)
                observer?(turn)
                switch turn {
                case .sentFull: break
                case .sent, .idle: pause(interval)
                case .failed:
                    pause(retry.delay(afterFailures: health.failuresInARow, jitter: Double.random(in: 0..<1)))
                case .retryAfter(let seconds):
                    pause(max(seconds, retry.delay(afterFailures: health.failuresInARow, jitter: Double.random(in: 0..<1))))
                }
            }
        }
    }

    /// Asks the thread to stop after its turn, calls `cancel` (which ends what is in flight),
    /// and waits until it has. Safe to call when it never started.
    public func stop(cancel: () -> Void = {}) {
        state.withLock { $0.stopping = true }
        wakeUp.signal()
        cancel()
        finished.wait()
    }

    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Ends the wait in progress, if any: the next turn starts now (a destination resumed).
    public func wake() { wakeUp.signal() }

    public var health: Health { state.withLock { $0.health } }

    /// Waits `seconds` or until stopped, whichever comes first: a consumer's own waits (a
    /// destination that signals nothing, polled) end with the follower.
    public func pause(_ seconds: Double) {
        guard seconds > 0, !isStopping else { return }
        _ = wakeUp.wait(timeout: .now() + seconds)
    }

    /// A batch was accepted. Announces the recovery, with `fields`, when failures came before it.
    public func noteAccepted(_ fields: [(String, JSONValue)] = []) {
        let recovered = state.withLock { s -> Bool in
            defer { s.health.failuresInARow = 0 }
            s.health.batches += 1
            return s.health.failuresInARow > 0
        }
        if recovered { announce(events + "_resumed", fields) }
    }

    /// The destination failed. `countsInARow`: whether the retry schedule waits longer for it (a
    /// refusal that pauses one stream does not slow the others).
    public func noteFailure(_ reason: String, countsInARow: Bool = true) {
        let first = state.withLock { s -> Bool in
            s.health.lastError = reason
            s.health.lastErrorAt = clock()
            s.health.failures += 1
            if countsInARow { s.health.failuresInARow += 1 }
            return s.health.failuresInARow <= 1
        }
        if first { announce(events + "_failed", [("reason", .string(reason))]) }
    }
}
