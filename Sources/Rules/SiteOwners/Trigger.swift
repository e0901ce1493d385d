import Primitives

/// A conversion trigger as the ledger records it: the browser fetched the well-known
/// trigger-attribution URL of `site` at `recordedAt`.
public struct Trigger: Sendable, Equatable {
    public var id: UInt64
    public var recordedAt: Timestamp
    /// The registrable domain the trigger URL was fetched from.
    public var site: String
    public var triggerData: UInt8
    public var priority: UInt8
    /// The source site named by `?attributionSource=` (same-site form), or nil (cross-site form,
    /// where `site` itself is the source site).
    public var attributionSource: String?

    public init(id: UInt64, recordedAt: Timestamp, site: String, triggerData: UInt8, priority: UInt8, attributionSource: String?) {
        self.id = id
        self.recordedAt = recordedAt
        self.site = site
        self.triggerData = triggerData
        self.priority = priority
        self.attributionSource = attributionSource
    }
}
