import Primitives

/// When the conversion value a postback carries could have been set, from when the postback
/// arrived and which window it reports: what decides which version of the app's schema the
/// value means (`SchemaHistory.reading`).
///
/// From the windows and delays in PROTOCOLS.md §3 (SKAdNetwork 4, which AdAttributionKit keeps):
/// - A window's value is set inside that window: days 0–2 after first launch for postback 1,
///   2–7 for postback 2, 7–35 for postback 3. A lock ends a window early, never late.
/// - A postback leaves 24–48 h after its window ends (postback 1) or 24–144 h (postbacks 2 and 3).
/// - Before SKAdNetwork 4 there is one postback, sent 0–24 h after a 24 h timer that each
///   update restarts: the last value was set 24–48 h before it left.
///
/// - A device that cannot deliver (it is offline, or this endpoint is down) retries for at most
///   nine days (§4): a copy can arrive up to nine days after it first left.
///
/// So the value was set no later than 24 h before the postback arrived, and no earlier than the
/// longest delay, the longest window and the nine days of retries before that. A postback whose
/// span holds a schema change could be either version's: it is counted as ambiguous, never given
/// one meaning.
public struct ValueSetWindow: Sendable, Equatable {
    /// The earliest and the latest moment the value could have been set.
    public var earliest: Timestamp
    public var latest: Timestamp

    public static let hour: Int64 = 3_600_000
    public static let day: Int64 = 24 * hour
    /// How long a device goes on retrying a copy it could not deliver.
    public static let retries: Int64 = 9 * day

    /// The longest window (a lock only shortens it) and the longest delay of each postback.
    static func bounds(sequenceIndex: Int?) -> (window: Int64, delay: Int64) {
        switch sequenceIndex {
        case nil: (0, 48 * hour)
        case 0?: (2 * day, 48 * hour)
        case 1?: (5 * day, 144 * hour)
        default: (28 * day, 144 * hour)
        }
    }

    /// `sequenceIndex`: `postback-sequence-index`, nil before SKAdNetwork 4.
    public init(arrival: Timestamp, sequenceIndex: Int?) {
        let (window, delay) = Self.bounds(sequenceIndex: sequenceIndex)
        // Saturating: a damaged log's time millions of years away must not trap a start.
        func before(_ span: Int64) -> Timestamp {
            let (t, overflow) = arrival.millisecondsSinceEpoch.subtractingReportingOverflow(span)
            return Timestamp(millisecondsSinceEpoch: overflow ? .min : t)
        }
        latest = before(24 * Self.hour)
        earliest = before(delay + window + Self.retries)
    }

    /// How long after a schema changes its postbacks may still have been set under the old one,
    /// and how long before they surely were not: what the page says of a change.
    public static func ambiguity(sequenceIndex: Int?) -> (from: Int64, to: Int64) {
        let (window, delay) = bounds(sequenceIndex: sequenceIndex)
        return (24 * hour, delay + window + retries)
    }
}
