import CSystemShims
import Foundation

extension DispatchGroup {
    /// Runs `body` on a thread of its own, named as debuggers and `top -H` show it. The group is
    /// entered now and left when `body` returns, so `wait()` is how its owner joins the thread.
    public func startThread(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        enter()
        let thread = Thread { [self] in
            // Foundation keeps `Thread.name` to itself on Linux; the kernel's name (what `top -H`,
            // `perf` and /proc show) is set by the thread itself.
            _ = c_system_shims_name_this_thread(name)
            body()
            leave()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
