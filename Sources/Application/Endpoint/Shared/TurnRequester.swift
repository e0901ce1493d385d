import Locking

/// Asks the event loop for a turn, from any thread: for work finished elsewhere (a signature
/// checked on a worker, a call's outcome queued for the log) that the loop's `endTurn` takes up.
/// Made before the HTTP server it reaches, which connects it once started.
final class TurnRequester: Sendable {
    /// The closure is held in a struct: a bare closure as `Locked`'s value is reabstracted for
    /// the generic `withLock` and written back wrapped in two more thunks on every access, so each
    /// call would go through a longer chain than the one before, slower every time and in the
    /// end a stack overflow.
    private struct Turn: Sendable {
        let request: @Sendable () -> Void
    }

    private let turn = Locked<Turn?>(nil)

    init() {}

    func connect(_ request: @escaping @Sendable () -> Void) {
        turn.withLock { $0 = Turn(request: request) }
    }

    func request() {
        turn.withLock { $0 }?.request()
    }
}
