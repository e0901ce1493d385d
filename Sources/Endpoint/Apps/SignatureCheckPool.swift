import Dispatch
import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// Threads that check postback signatures off the event loop: one for each core the process may
/// run on besides the loop's own (`forOtherCores`), none on a single core. A check takes about
/// 100 µs; on the loop, a burst of postbacks would hold up every report of its turn.
///
/// The threads run at a lower priority (nice 19) than the loop, so that where the scheduler puts
/// one on the loop's core, the loop still gets it whenever it has work.
final class SignatureCheckPool: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let threads = DispatchGroup()
    let size: Int

    /// A pool with a thread for every core but one, or nil on a single core.
    static func forOtherCores() -> SignatureCheckPool? {
        let cores = allowedCores()
        return cores > 1 ? SignatureCheckPool(threads: cores - 1) : nil
    }

    /// The cores this process may run on (`taskset`, a container's cpuset), from
    /// `/proc/self/status`; elsewhere, the machine's.
    static func allowedCores() -> Int {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) {
            var count = 0
            for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
                let bounds = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                if bounds.count == 1 { count += 1 } else if bounds.count == 2, bounds[1] >= bounds[0] { count += bounds[1] - bounds[0] + 1 }
            }
            if count > 0 { return count }
        }
        return ProcessInfo.processInfo.activeProcessorCount
    }

    init(threads count: Int) {
        size = max(1, count)
        for n in 0..<size {
            threads.startThread(named: "signature-check-\(n)") { [self] in
                #if canImport(Glibc)
                // On Linux a nice value is a thread's own: 0 names the calling thread only.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
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
