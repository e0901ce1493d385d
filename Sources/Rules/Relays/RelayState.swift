import Primitives

/// How a relay destination stands, in one word, for the API, the page and `/metrics`.
public enum RelayState: String, Sendable, CaseIterable {
    /// Taking copies, or caught up.
    case delivering
    /// Its next copy waits to be tried again, for less than `callout`.
    case retrying
    /// Failing for `callout` or more: called out on every view, as a silent site is.
    case failing
    /// Failed for longer than the delivery's time to give up: not tried until an admin resumes it.
    case dead
    /// An admin paused it.
    case paused

    /// Failing this long is called out (milliseconds).
    public static let callout: Int64 = 3_600_000

    public static func of(paused: Bool, deadSince: Timestamp?, failingSince: Timestamp?, retrying: Bool, now: Timestamp) -> RelayState {
        if paused { return .paused }
        if deadSince != nil { return .dead }
        if let failingSince, now.millisecondsSinceEpoch - failingSince.millisecondsSinceEpoch >= callout { return .failing }
        return retrying ? .retrying : .delivering
    }

    /// Called out on every view.
    public var needsAttention: Bool { self == .failing || self == .dead }
}
