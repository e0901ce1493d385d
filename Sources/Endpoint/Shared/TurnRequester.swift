import Locking

/// Asks the event loop for a turn, from any thread: for work finished elsewhere (a signature
/// checked on a worker, a call's outcome queued for the log) that the loop's `endTurn` takes up.
/// Made before the HTTP server it reaches, which connects it once started.
final class TurnRequester: Sendable {
    private let turn = Locked<(@Sendable () -> Void)?>(nil)

    init() {}

    func connect(_ request: @escaping @Sendable () -> Void) {
        turn.withLock { $0 = request }
    }

    func request() {
        turn.withLock { $0 }?()
    }
}
