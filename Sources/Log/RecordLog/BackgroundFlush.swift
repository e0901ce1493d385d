import Foundation
import Locking

/// Runs a log's `fdatasync` on a thread of its own, so that the thread that committed can do
/// other work while the disk is busy: one flush at a time, started by `begin` and joined by `finish`.
///
/// The committing thread writes a batch, begins its flush here, prepares the batch's answers
/// (which stay held), then waits in `finish`. On the benchmark machine the flush is 150–400 µs of
/// every 1.5 ms turn, spent idle before this (docs/PERFORMANCE.md).
final class BackgroundFlush: @unchecked Sendable {
    private let start = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    /// The last flush's error and the stop request. The semaphores only wake; what passes between
    /// the threads goes under this lock, as elsewhere in the project: ThreadSanitizer sees a pthread
    /// mutex, not libdispatch's atomics.
    private let shared = Locked<(file: LogFile?, outcome: StoreError?, stopping: Bool)>((nil, nil, false))

    init() {
        stopped.startThread(named: "record-log-flush") { [self] in run() }
    }

    /// Starts flushing what has been written so far to `file` (the active segment, which a roll
    /// replaces between batches).
    func begin(_ file: LogFile) {
        shared.withLock { $0.file = file }
        start.signal()
    }

    /// Waits for the flush `begin` started; nil once it is on the medium.
    func finish() -> StoreError? {
        done.wait()
        return shared.withLock { $0.outcome }
    }

    /// Stops the thread; no flush may be in flight.
    func stop() {
        shared.withLock { $0.stopping = true }
        start.signal()
        stopped.wait()
    }

    private func run() {
        while true {
            start.wait()
            if shared.withLock({ $0.stopping }) { return }
            var outcome: StoreError?
            do {
                try shared.withLock { $0.file }?.sync()
            } catch {
                outcome = error
            }
            shared.withLock { $0.outcome = outcome }
            done.signal()
        }
    }
}
