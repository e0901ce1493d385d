import Primitives

/// How far behind the log one of a consumer's streams is, in seconds: the age of the oldest record
/// it has seen waiting, or, when it has not seen one, of the last time it read the log to its end
/// (a record it has not seen came after that). So the figure never understates the lag, and costs
/// no read of the log to report.
public struct StreamLag: Sendable, Equatable {
    /// The time of the first record of the batch in hand.
    public private(set) var oldestPending: Timestamp?
    /// When the stream's reading last reached the log's durable end.
    public private(set) var readThrough: Timestamp?

    public init() {}

    public mutating func readToEnd(at time: Timestamp) { readThrough = time }
    public mutating func pending(since time: Timestamp?) { oldestPending = time }
    public mutating func caughtUp() { oldestPending = nil }

    /// The lag in seconds at `now`, with `waiting` records not yet handed on.
    public func seconds(waiting: Int, now: Timestamp) -> Double {
        guard waiting > 0, let oldest = oldestPending ?? readThrough else { return 0 }
        return max(0, Double(now.millisecondsSinceEpoch - oldest.millisecondsSinceEpoch) / 1000)
    }
}
