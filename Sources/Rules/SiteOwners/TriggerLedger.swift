import Primitives

/// The triggers recorded by this endpoint, and which of them already back a destination copy.
///
/// A value type: the endpoint keeps one behind a lock, rebuilds it from the log at start, and
/// forgets triggers once no report can match them any more (`prune`). Triggers are kept per
/// site and trigger data in time order (the store's clock never goes backwards), so a report
/// looks only at the triggers of its own trigger data inside a time window, found by binary
/// search, however many the site has recorded.
public struct TriggerLedger: Sendable {
    private struct Bucket: Hashable {
        var site: String
        var triggerData: UInt8
    }
    private var buckets: [Bucket: [Trigger]] = [:]
    private var sites: [String: Int] = [:]  // triggers per site; cross-site ones counted separately
    private var crossSite: [String: Int] = [:]
    public private(set) var consumed: Set<UInt64> = []
    /// Triggers a site may hold here at once. The pixel answers anyone, so without it a flood of
    /// conversions would grow memory for as long as the window lasts. Past it the site's oldest
    /// are forgotten early (they stay in the log): a report they would have backed is quarantined
    /// `no_matching_trigger` rather than lost, and under such a flood a match means little anyway.
    public let perSiteBound: Int
    /// Triggers forgotten early because their site was past its bound, since start.
    public private(set) var forgottenEarly = 0

    /// 1,048,576 triggers a site, about 100 MB: more conversions than a large shop records in the
    /// 7 days + 48 h a trigger is useful.
    public init(perSiteBound: Int = 1 << 20) {
        self.perSiteBound = max(1, perSiteBound)
    }

    public var count: Int { sites.values.reduce(0, +) }

    public mutating func record(_ trigger: Trigger) {
        let key = Bucket(site: trigger.site, triggerData: trigger.triggerData)
        // Changed in place: a copy taken out and written back would copy the whole bucket, every
        // trigger of its site and data for the window, on every trigger recorded.
        if let last = buckets[key]?.last, trigger.recordedAt < last.recordedAt {
            // Replay and a manual clock set backwards can deliver out of order; keep the order anyway.
            let at = Self.lowerBound(buckets[key]!, trigger.recordedAt.millisecondsSinceEpoch + 1)
            buckets[key]!.insert(trigger, at: at)
        } else {
            buckets[key, default: []].append(trigger)
        }
        sites[trigger.site, default: 0] += 1
        if trigger.attributionSource == nil { crossSite[trigger.site, default: 0] += 1 }
        // In steps of an eighth, so that finding the oldest is paid once per many triggers.
        if sites[trigger.site, default: 0] > perSiteBound + perSiteBound / 8 { forgetOldest(of: trigger.site) }
    }

    /// Brings a site back to its bound by forgetting its oldest triggers, across its trigger data.
    /// The cut is found by binary search on time over the sorted buckets (no sort of a million
    /// times under the book's lock, on the loop).
    private mutating func forgetOldest(of site: String) {
        let keys = buckets.keys.filter { $0.site == site }
        let lists = keys.map { buckets[$0]! }
        let excess = lists.reduce(0) { $0 + $1.count } - perSiteBound
        guard excess > 0 else { return }
        func recorded(before time: Int64) -> Int { lists.reduce(0) { $0 + Self.lowerBound($1, time) } }
        // The time of the excess-th oldest: the first at which that many were recorded by then.
        var low = lists.compactMap { $0.first?.recordedAt.millisecondsSinceEpoch }.min() ?? 0
        var high = lists.compactMap { $0.last?.recordedAt.millisecondsSinceEpoch }.max() ?? 0
        while low < high {
            let mid = low + (high - low) / 2
            if recorded(before: mid + 1) >= excess { high = mid } else { low = mid + 1 }
        }
        let cutoff = low
        // Everything before it goes, then as many recorded at its very millisecond as are still
        // over (a manual clock records a whole flood at one instant).
        var left = excess - recorded(before: cutoff)
        for (key, list) in zip(keys, lists) {
            var cut = Self.lowerBound(list, cutoff)
            while left > 0, cut < list.count, list[cut].recordedAt.millisecondsSinceEpoch == cutoff {
                cut += 1
                left -= 1
            }
            guard cut > 0 else { continue }
            forget(list[..<cut])
            forgottenEarly += cut
            buckets[key] = cut == list.count ? nil : Array(list[cut...])
        }
    }

    private mutating func forget(_ triggers: ArraySlice<Trigger>) {
        for t in triggers {
            consumed.remove(t.id)
            sites[t.site, default: 0] -= 1
            if t.attributionSource == nil { crossSite[t.site, default: 0] -= 1 }
        }
    }

    public mutating func consume(_ id: UInt64) { consumed.insert(id) }
    public mutating func release(_ id: UInt64) { consumed.remove(id) }

    /// Whether any trigger that could back a destination copy for these sites was recorded:
    /// same-site triggers on `destination`, or cross-site ones served by `source`.
    public func hasTriggers(source: String, destination: String) -> Bool {
        sites[destination, default: 0] > 0 || crossSite[source, default: 0] > 0
    }

    /// The unused triggers with `triggerData` recorded in `window` (milliseconds, inclusive) that
    /// could back a destination copy from `source` to `destination`, oldest first: same-site
    /// triggers on `destination` naming `source` (or no source), and cross-site triggers on `source`.
    public func candidates(source: String, destination: String, triggerData: UInt8, in window: ClosedRange<Int64>) -> [Trigger] {
        var found: [Trigger] = []
        func collect(_ site: String, _ accept: (Trigger) -> Bool) {
            guard let list = buckets[Bucket(site: site, triggerData: triggerData)] else { return }
            var i = Self.lowerBound(list, window.lowerBound)
            while i < list.count, list[i].recordedAt.millisecondsSinceEpoch <= window.upperBound {
                if !consumed.contains(list[i].id) && accept(list[i]) { found.append(list[i]) }
                i += 1
            }
        }
        collect(destination) { $0.attributionSource == nil || $0.attributionSource == source }
        if source != destination { collect(source) { $0.attributionSource == nil } }
        return found.sorted { $0.recordedAt < $1.recordedAt }
    }

    /// The unused triggers of a site, oldest first (for tests and inspection).
    public func unused(site: String) -> [Trigger] {
        buckets.filter { $0.key.site == site }.values.joined().filter { !consumed.contains($0.id) }.sorted { $0.recordedAt < $1.recordedAt }
    }

    /// Forgets triggers recorded before `time` (and their consumption marks).
    public mutating func prune(before time: Timestamp) {
        for (key, list) in buckets {
            let cut = Self.lowerBound(list, time.millisecondsSinceEpoch)
            guard cut > 0 else { continue }
            forget(list[..<cut])
            buckets[key] = cut == list.count ? nil : Array(list[cut...])
        }
        sites = sites.filter { $0.value > 0 }
        crossSite = crossSite.filter { $0.value > 0 }
    }

    /// The first index whose trigger was recorded at or after `time`.
    private static func lowerBound(_ list: [Trigger], _ time: Int64) -> Int {
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].recordedAt.millisecondsSinceEpoch < time { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
