import Dispatch
import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// Threads that check postback signatures off the event loop, one per core. A check takes about
/// 100 µs; on the loop, a burst of postbacks would hold up every report of its turn.
///
/// The threads run at a lower priority (nice 10) than the loop: where they share its core, the
/// loop still gets it whenever it has work, so reports keep their latency and checks take what
/// is left; on a machine with more cores they run beside it.
final class SignatureCheckPool: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let threads = DispatchGroup()
    let size: Int

    init(threads count: Int = ProcessInfo.processInfo.activeProcessorCount) {
        size = max(1, count)
        for n in 0..<size {
            threads.startThread(named: "signature-check-\(n)") { [self] in
                #if canImport(Glibc)
                // On Linux a nice value is a thread's own: 0 names the calling thread only.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
                #endif
                run()
            }
        }
    }

    /// Runs `job` on one of the threads, in the order given (across threads, in no order).
    func submit(_ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.jobs.append(job) }
        available.signal()
    }

    /// Lets the threads finish what was submitted, then stops them.
    func stop() {
        state.withLock { $0.stopping = true }
        for _ in 0..<size { available.signal() }
        threads.wait()
    }

    private func run() {
        while true {
            available.wait()
            let (job, stopping) = state.withLock { s -> ((@Sendable () -> Void)?, Bool) in
                (s.jobs.isEmpty ? nil : s.jobs.removeFirst(), s.stopping)
            }
            if let job {
                job()
                continue
            }
            if stopping { return }
        }
    }
}
