/// Something that follows the log to a destination from a durable cursor: the ClickHouse export,
/// and each relay. A `LogFollower` runs it, a turn at a time, on a thread of its own; the log is
/// the backlog, so the endpoint never waits for a consumer and a consumer's memory does not grow
/// with how far behind it is.
///
/// A turn reads the records after its cursor up to the log's durable end (bounded by its own
/// limits), hands them to its destination, and saves its cursor past what the destination
/// accepted, never before: a crash in between sends them again (at-least-once). What went wrong is
/// noted on the follower, which then waits its `RetrySchedule` before the next turn.
public protocol LogConsumer: Sendable {
    func turn(_ follower: LogFollower) -> LogTurn
}

/// How a consumer's turn ended: what the follower does next.
public enum LogTurn: Sendable, Equatable {
    /// Nothing was waiting: look again after the follower's interval.
    case idle
    /// Everything waiting was sent: look again after the interval, so that what arrives meanwhile
    /// goes as one batch rather than many small ones.
    case sent
    /// A limit cut the turn and more is waiting: the next turn starts at once.
    case sentFull
    /// The destination failed (noted on the follower): the next turn waits the retry schedule.
    case failed
    /// The destination failed and asked to be tried again in this many seconds (`Retry-After`):
    /// the next turn waits that, or the retry schedule if it is longer.
    case retryAfter(Double)
}
