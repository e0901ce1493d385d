import Locking

/// Answers sent, by status code, for `/metrics`: a full queue or a full disk shows as 503s there,
/// whichever part of the endpoint answered, the connection cap's best-effort 503 included.
public final class ResponseCounts: Sendable {
    private let counts = Locked([UInt64](repeating: 0, count: 500))

    public init() {}

    func count(_ status: Int) {
        guard (100..<600).contains(status) else { return }
        counts.withLock { $0[status - 100] &+= 1 }
    }

    /// Each status sent at least once, with how many times, in order.
    public var sent: [(status: Int, count: UInt64)] {
        counts.withLock { counts in counts.indices.filter { counts[$0] > 0 }.map { ($0 + 100, counts[$0]) } }
    }
}
