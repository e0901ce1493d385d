import Primitives

/// Where a postback's first delivery was stored: its UTC day and the site it was sent to. A
/// delivery that comes again is counted there, against the postback it repeats (the Apps view,
/// the cluster's view), whenever it arrives.
public struct PostbackOrigin: Sendable, Hashable {
    /// Days since 1970-01-01 (UTC).
    public var day: Int32
    public var site: String

    public init(day: Int32, site: String) {
        self.day = day
        self.site = site
    }

    public init(receivedAt: Timestamp, site: String) {
        self.init(day: receivedAt.day, site: site)
    }
}
