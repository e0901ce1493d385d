import Dispatch
import Locking

/// A thread of its own that runs `sweep` at start, then once every `interval` seconds and
/// whenever it is woken (a manual clock set, more work queued), until stopped: the shape of the
/// endpoint's background upkeep (retention, the postback window, the segment digests).
final class PeriodicSweep: Sendable {
    private let name: String
    private let priority: ThreadPriority
    private let interval: Double
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    private let firstSweep = DispatchGroup()
    private let stoppingFlag = Locked(false)

    init(named name: String, priority: ThreadPriority = .normal, interval: Double = 60) {
        self.name = name
        self.priority = priority
        self.interval = interval
        firstSweep.enter()
    }

    func start(_ sweep: @escaping @Sendable () -> Void) {
        stopped.startThread(named: name, priority: priority) { [self] in
            var first = true
            while !stopping {
                sweep()
                if first { firstSweep.leave() }
                first = false
                _ = wakeUp.wait(timeout: .now() + interval)
            }
            if first { firstSweep.leave() }
        }
    }

    /// Asks for a sweep now.
    func wake() {
        wakeUp.signal()
    }

    /// Set once `stop` is called: a long sweep checks it between steps.
    var stopping: Bool { stoppingFlag.withLock { $0 } }

    /// Waits for the sweep made at start.
    func waitUntilStartSwept() {
        firstSweep.wait()
    }

    func stop() {
        stoppingFlag.withLock { $0 = true }
        wakeUp.signal()
        stopped.wait()
    }
}

/// An owner of a `PeriodicSweep` whose thread runs its `sweep()`: started, waited for and
/// stopped through the sweep.
protocol PeriodicallySwept: AnyObject, Sendable {
    associatedtype Swept
    var thread: PeriodicSweep { get }
    func sweep() -> Swept
}

extension PeriodicallySwept {
    func start() {
        thread.start { [self] in _ = sweep() }
    }

    /// Waits for the sweep the thread makes at start.
    func waitUntilStartSwept() {
        thread.waitUntilStartSwept()
    }

    func stop() {
        thread.stop()
    }
}
