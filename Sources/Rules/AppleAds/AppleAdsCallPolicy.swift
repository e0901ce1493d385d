import Primitives

/// What to do after each call to Apple's attribution API, as seed 002 prescribes:
/// - 200: the record is final (`attribution` true or false; Apple's fixed answer for a device in
///   Developer Mode is `test`, never attributed);
/// - 400: the token is invalid, final;
/// - 404: not found yet: again in 5 s, at most 3 times, while the token is under 24 h old;
/// - 500, 429, another 5xx, no answer (a dropped connection, a time-out): the service is down:
///   again later, backing off from 30 s to 15 min, until the token is 24 h old;
/// - any other status: refused, final (retrying would not change it).
/// A token 24 h old without a final answer is `expired`. Pure: times in, decision out.
public enum AppleAdsCallPolicy {
    public static let notFoundRetryDelay: Int64 = 5_000
    public static let maxNotFoundRetries = 3
    public static let firstBackoff: Int64 = 30_000
    public static let maxBackoff: Int64 = 15 * 60_000

    /// Where a token stands. The raw values are what the log and the export keep.
    public enum Status: UInt8, Sendable, CaseIterable {
        case pending = 0
        case attributed = 1
        case notAttributed = 2
        case invalidToken = 3
        case notFound = 4
        case expired = 5
        case refused = 6
        /// Apple's fixed answer for a token from a device in Developer Mode
        /// (`AppleAdsRecord.isTestPayload`): proof that the app's setup works, kept out of every count.
        case test = 7

        public var name: String {
            switch self {
            case .pending: "pending"
            case .attributed: "attributed"
            case .notAttributed: "not_attributed"
            case .invalidToken: "invalid_token"
            case .notFound: "not_found"
            case .expired: "expired"
            case .refused: "refused"
            case .test: "test"
            }
        }

        public var isFinal: Bool { self != .pending }
    }

    /// The answers so far for one token.
    public struct History: Sendable, Equatable {
        public var notFound = 0
        public var unavailable = 0

        public init(notFound: Int = 0, unavailable: Int = 0) {
            self.notFound = notFound
            self.unavailable = unavailable
        }
    }

    public enum Decision: Sendable, Equatable {
        case final(Status)
        case retry(at: Timestamp)
    }

    /// `status` is the HTTP status, or nil when no answer came. `record` is the 200's record.
    public static func decide(status: Int?, record: AppleAdsRecord?, history: inout History, receivedAt: Timestamp,
                              now: Timestamp) -> Decision {
        let expiry = receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds
        func retry(after delay: Int64) -> Decision {
            let at = now.millisecondsSinceEpoch + delay
            return at < expiry ? .retry(at: Timestamp(millisecondsSinceEpoch: at)) : .final(.expired)
        }
        switch status {
        case 200?:
            guard let record else {
                history.unavailable += 1
                return retry(after: backoff(history.unavailable))
            }
            return .final(record.isTestPayload ? .test : record.attribution ? .attributed : .notAttributed)
        case 400?:
            return .final(.invalidToken)
        case 404?:
            history.notFound += 1
            guard history.notFound <= maxNotFoundRetries else { return .final(.notFound) }
            return retry(after: notFoundRetryDelay)
        case nil, 429?, (500...599)?:
            history.unavailable += 1
            return retry(after: backoff(history.unavailable))
        default:
            return .final(.refused)
        }
    }

    /// 30 s after the first failure, doubling, at most 15 min.
    public static func backoff(_ failures: Int) -> Int64 {
        min(maxBackoff, firstBackoff << Int64(min(max(failures - 1, 0), 10)))
    }
}
