import Foundation
import Locking

/// Runs a log's `fdatasync` on a thread of its own, so that the thread that committed can do
/// other work while the disk is busy: one flush at a time, started by `begin` and joined by `finish`.
///
/// The committing thread writes a batch, begins its flush here, prepares the batch's answers
/// (which stay held), then waits in `finish`. On the benchmark machine the flush is 150–400 µs of
/// every 1.5 ms turn, spent idle before this (docs/PERFORMANCE.md).
final class BackgroundFlush: @unchecked Sendable {
    private let file: LogFile
    private let start = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    // Handed between the two threads through the semaphores, which order the accesses.
    private var outcome: StoreError?
    private var stopping = false

    init(file: LogFile) {
        self.file = file
        stopped.startThread(named: "report-store-flush") { [self] in run() }
    }

    /// Starts flushing what has been written so far.
    func begin() {
        start.signal()
    }

    /// Waits for the flush `begin` started; nil once it is on the medium.
    func finish() -> StoreError? {
        done.wait()
        return outcome
    }

    /// Stops the thread; no flush may be in flight.
    func stop() {
        stopping = true
        start.signal()
        stopped.wait()
    }

    private func run() {
        while true {
            start.wait()
            if stopping { return }
            do {
                try file.sync()
                outcome = nil
            } catch {
                outcome = error
            }
            done.signal()
        }
    }
}
