import Foundation

extension DispatchGroup {
    /// Runs `body` on a thread of its own, named as debuggers and `top -H` show it. The group is
    /// entered now and left when `body` returns, so `wait()` is how its owner joins the thread.
    public func startThread(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        enter()
        let thread = Thread { [self] in
            body()
            leave()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
