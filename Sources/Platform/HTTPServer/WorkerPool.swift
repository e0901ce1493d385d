import Dispatch
import Foundation
import Locking

/// Threads for work too slow for the event loop: checking postback signatures (about 100 µs),
/// blind-signing PCM tokens (milliseconds), and the reads that compute their answer (a route with
/// `workers`: the summaries). On the loop, a burst of any would hold up every report of its turn.
///
/// The threads run below the loop (`priority`), so that where the scheduler puts one on the
/// loop's core, the loop still gets it whenever it has work.
public final class WorkerPool: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let threads = DispatchGroup()
    public let size: Int
    /// Jobs waiting beyond this many are refused by `submit` (nil: never).
    public let maxWaiting: Int?

    /// The cores this process may run on (`taskset`, a container's cpuset), from
    /// `/proc/self/status`; elsewhere, the machine's.
    public static func allowedCores() -> Int {
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

    /// Threads named `name-0`, `name-1`, … as `top -H` shows them.
    public init(named name: String, threads count: Int, priority: ThreadPriority, maxWaiting: Int? = nil) {
        size = max(1, count)
        self.maxWaiting = maxWaiting
        for n in 0..<size {
            threads.startThread(named: "\(name)-\(n)", priority: priority) { [self] in run() }
        }
    }

    /// Runs `job` on one of the threads, in the order given (across threads, in no order); false,
    /// and `job` never runs, when `maxWaiting` jobs already wait or the pool is stopping.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let taken = state.withLock { s -> Bool in
            guard !s.stopping, s.jobs.count < (maxWaiting ?? Int.max) else { return false }
            s.jobs.append(job)
            return true
        }
        if taken { available.signal() }
        return taken
    }

    /// Lets the threads finish what was submitted, then stops them.
    public func stop() {
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
