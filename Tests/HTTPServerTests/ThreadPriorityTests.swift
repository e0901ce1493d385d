import Dispatch
import Foundation
import Locking
import Testing

/// The threads that do slow work beside the event loop must never hold up its reports: signing
/// threads run in SCHED_IDLE, signature checks at nice 19. Read back as the kernel reports them.
@Suite struct ThreadPriorityTests {
    /// (nice, scheduling policy) of the calling thread, from /proc (fields 19 and 41 of `stat`).
    static func niceAndPolicy() -> (Int, Int)? {
        guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields from the third (state) on follow the command name's closing parenthesis.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 38, let nice = Int(fields[19 - 3]), let policy = Int(fields[41 - 3]) else { return nil }
        return (nice, policy)
    }

    @Test(.enabled(if: runsOnLinux, "scheduling policies and nice values are read from /proc, which only Linux has"))
    func eachPriorityIsWhatTheKernelSchedulesTheThreadWith() throws {
        #if os(Linux)
        let seen = Locked<[String: (Int, Int)]>([:])
        let group = DispatchGroup()
        for (name, priority) in [("normal", ThreadPriority.normal), ("background", .background), ("idle", .idle)] {
            group.startThread(named: name, priority: priority) {
                let observed = Self.niceAndPolicy()
                seen.withLock { $0[name] = observed }
            }
        }
        group.wait()
        let observed = seen.withLock { $0 }
        let (sched_other, sched_idle) = (0, 5)
        #expect(observed["normal"]?.1 == sched_other)
        #expect(observed["background"].map { $0 == (19, sched_other) } == true)
        #expect(observed["idle"]?.1 == sched_idle)
        // And the thread that started them is left as it was.
        #expect(Self.niceAndPolicy()?.1 == sched_other)
        #endif
    }
}
