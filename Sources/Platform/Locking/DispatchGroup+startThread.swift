import CSystemShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a thread started by `startThread` competes for a core with the event loop.
public enum ThreadPriority: Sendable {
    /// As every other thread.
    case normal
    /// Nice 19 (on Linux; elsewhere as `normal`): a smaller share of a busy core, still a share.
    case background
    /// Linux's SCHED_IDLE: only a core nothing else wants, given up at once when an ordinary
    /// thread wakes. Where the class is refused, nice 19.
    case idle
}

extension DispatchGroup {
    /// Runs `body` on a thread of its own, named as debuggers and `top -H` show it. The group is
    /// entered now and left when `body` returns, so `wait()` is how its owner joins the thread.
    public func startThread(named name: String, stackSize: Int? = nil, priority: ThreadPriority = .normal,
                            _ body: @escaping @Sendable () -> Void) {
        enter()
        let thread = Thread { [self] in
            // Foundation keeps `Thread.name` to itself on Linux; the kernel's name (what `top -H`,
            // `perf` and /proc show) is set by the thread itself, and so are its nice value and
            // scheduling class: on Linux both belong to the thread, not the process.
            _ = c_system_shims_name_this_thread(name)
            #if canImport(Glibc)
            let background = { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
            switch priority {
            case .normal: break
            case .background: background()
            case .idle: if c_system_shims_make_this_thread_idle() != 0 { background() }
            }
            #endif
            body()
            leave()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
