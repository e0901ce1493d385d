import Primitives

/// What holds a destination's delivery back, and what it has been asked to send again: kept in
/// `data/relays/NAME.state.json` beside its cursor, so that a restart changes none of it.
/// - `paused`: an admin paused it;
/// - `failingSince`: its first failure since it last took a copy (or since a resume);
/// - `deadSince`: it failed for longer than the delivery's `deadAfter`, and is not tried again
///   until an admin resumes it. Its cursor stays where it was: nothing is skipped;
/// - `replay`: a period an admin asked to send again.
public struct RelayHold: Codable, Sendable, Equatable {
    /// The destination's URL: a hold is for the URL it was made for (a destination registered
    /// again under the same name, for another URL, starts afresh, as its cursor does).
    public var url: String
    public var paused = false
    public var failingSince: Timestamp?
    public var deadSince: Timestamp?
    public var replay: RelayReplay?

    public init(url: String) { self.url = url }

    private enum CodingKeys: String, CodingKey {
        case url, paused, failingSince = "failing_since", deadSince = "dead_since", replay
    }
}

/// A period sent again to a destination: every copy it takes that arrived in `[since, until)`,
/// from the oldest record the log keeps up to where the log ended when it was asked for. Each
/// copy carries the delivery id it had the first time.
public struct RelayReplay: Codable, Sendable, Equatable {
    public var since: Timestamp
    public var until: Timestamp
    public var askedAt: Timestamp
    /// Where the walk began (the oldest record kept), where it is, and where it stops (the log's
    /// end when it was asked for).
    public var start: Int
    public var offset: Int
    public var end: Int
    /// Copies of the period sent again so far (taken or refused).
    public var sent = 0

    public init(since: Timestamp, until: Timestamp, askedAt: Timestamp, offset: Int, end: Int) {
        self.since = since
        self.until = until
        self.askedAt = askedAt
        self.start = offset
        self.offset = offset
        self.end = end
    }

    public var isDone: Bool { offset >= end }
    /// How far the walk has got, from 0 to 1.
    public var progress: Double { end > start ? min(1, Double(offset - start) / Double(end - start)) : 1 }

    private enum CodingKeys: String, CodingKey {
        case since, until, askedAt = "asked_at", start, offset, end, sent
    }
}
