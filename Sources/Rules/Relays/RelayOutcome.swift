import Primitives

/// What a destination's answer to one copy means for that copy.
///
/// - 2xx: delivered.
/// - 408, 429, 5xx, no answer (a time-out, a reset, a refused connection): tried again later,
///   with backoff and jitter; a `Retry-After` on a 429 or a 503 is honoured, up to `longestWait`.
/// - Any other 4xx: refused. The destination said it will never take this copy; it is recorded
///   with its status and the start of the answer's body, and counted, never sent again.
/// - 3xx: refused too. A redirect is never followed: it could lead anywhere, including inside
///   the endpoint's own network, past every check made on the configured destination.
/// - 1xx, or a status outside 100–599: the destination is broken; tried again.
public enum RelayOutcome: Sendable, Equatable {
    case delivered
    case refused(status: Int)
    /// `after`: seconds the destination asked for, or nil for the follower's own backoff.
    case retry(after: Double?)

    /// The longest `Retry-After` honoured: a destination cannot park its copies for days with
    /// one header (the wait starts again at the next answer anyway).
    public static let longestWait: Double = 3600

    public static func of(status: Int, retryAfter: String?, now: Timestamp) -> RelayOutcome {
        switch status {
        case 200...299: return .delivered
        case 408: return .retry(after: nil)
        case 429, 503: return .retry(after: retryAfter.flatMap { wait(retryAfter: $0, now: now) })
        case 500...599: return .retry(after: nil)
        case 300...399, 400...499: return .refused(status: status)
        default: return .retry(after: nil)
        }
    }

    /// `Retry-After` (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date; nil when it is neither.
    /// A date in the past is no wait; anything longer than `longestWait` is cut to it.
    public static func wait(retryAfter value: String, now: Timestamp) -> Double? {
        let text = String(value.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            // Ten digits already pass the cap; more could overflow.
            guard text.utf8.count <= 10, let seconds = Double(text) else { return longestWait }
            return min(seconds, longestWait)
        }
        guard let date = HTTPDateParsing.imfFixdate(text) else { return nil }
        let seconds = Double(date.millisecondsSinceEpoch - now.millisecondsSinceEpoch) / 1000
        return min(max(seconds, 0), longestWait)
    }
}

/// The one HTTP-date form senders must produce (IMF-fixdate, RFC 9110 §5.6.7):
/// `Sun, 06 Nov 1994 08:49:37 GMT`. The two obsolete forms are not taken: a destination that
/// sends one is waited for with the relay's own backoff.
enum HTTPDateParsing {
    static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func imfFixdate(_ text: String) -> Timestamp? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())),
              parts[1].count == 2, let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
              parts[3].count == 4, let year = Int(parts[3]), parts[5] == "GMT" else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]) else { return nil }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        guard (1000...9999).contains(year) else { return nil }
        return Timestamp(rfc3339: "\(year)-\(two(month + 1))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))Z")
    }
}
