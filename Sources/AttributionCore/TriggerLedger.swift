/// The triggers recorded by this endpoint, and which of them already back a destination copy.
///
/// A value type: the endpoint keeps one behind a lock, rebuilds it from the log at start, and
/// forgets triggers once no report can match them any more (`prune`).
public struct TriggerLedger: Sendable {
    private var bySite: [String: [Trigger]] = [:]
    public private(set) var consumed: Set<UInt64> = []

    public init() {}

    public var count: Int { bySite.values.reduce(0) { $0 + $1.count } }

    public mutating func record(_ trigger: Trigger) {
        bySite[trigger.site, default: []].append(trigger)
    }

    public mutating func consume(_ id: UInt64) { consumed.insert(id) }
    public mutating func release(_ id: UInt64) { consumed.remove(id) }

    /// Whether any trigger that could back a destination copy for these sites was recorded:
    /// same-site triggers on `destination`, or cross-site ones served by `source`.
    public func hasTriggers(source: String, destination: String) -> Bool {
        !(bySite[destination] ?? []).isEmpty || (bySite[source] ?? []).contains { $0.attributionSource == nil }
    }

    /// The unused triggers that could back a destination copy from `source` to `destination`.
    public func candidates(source: String, destination: String) -> [Trigger] {
        let sameSite = (bySite[destination] ?? []).filter { $0.attributionSource == nil || $0.attributionSource == source }
        let crossSite = source == destination ? [] : (bySite[source] ?? []).filter { $0.attributionSource == nil }
        return (sameSite + crossSite).filter { !consumed.contains($0.id) }
    }

    /// Forgets triggers recorded before `time` (and their consumption marks).
    public mutating func prune(before time: Timestamp) {
        for (site, triggers) in bySite {
            let (old, kept) = (triggers.filter { $0.recordedAt < time }, triggers.filter { $0.recordedAt >= time })
            for t in old { consumed.remove(t.id) }
            bySite[site] = kept.isEmpty ? nil : kept
        }
    }
}
