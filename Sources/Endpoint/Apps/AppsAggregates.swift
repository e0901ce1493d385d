import Foundation
import Locking
import Postbacks
import Primitives
import ReportStore

/// The Apps view's counts per UTC day and site, kept as postbacks are stored, so that a summary
/// costs the days it covers, not the postbacks, and answers for days whose records retention
/// removed. A start rebuilds them from the segments' digests (those of removed segments are kept
/// for this) and the log written since.
///
/// Not the deliveries that came again: those are counted against the postbacks they repeat (the
/// day and site of the first delivery, as the cluster's view counts them), which a retry record
/// alone does not say (`AppsSummaryRoutes` reads them per query).
final class AppsAggregates: SegmentDigestOwner {
    private struct DaySite: Hashable, Codable {
        var day: Int32
        var site: String
    }
    private let counts = Locked<[DaySite: AppsSummary]>([:])

    /// Counts a stored postback.
    func add(_ postback: StoredPostback) {
        let key = DaySite(day: SummaryAggregates.day(of: postback.receivedAt), site: postback.draft.site)
        let facts = AppsSummary.Facts(postback)
        counts.withLock { $0[key, default: AppsSummary(sites: [key.site])].add(facts, retries: 0) }
    }

    /// Takes one record as replay shows it.
    func take(_ view: ReportStore.RecordView) {
        if let postback = StoredPostback.decode(view) { add(postback) }
    }

    /// The counts of the query's days and site; `sites` names every site with postbacks in those days.
    func summary(_ query: AppsSummary.Query) -> AppsSummary {
        counts.withLock { counts in
            var sites: Set<String> = []
            var total = AppsSummary(sites: [])
            for (key, summary) in counts where key.day >= query.from && key.day <= query.to {
                if !key.site.isEmpty { sites.insert(key.site) }
                guard query.site.map({ $0 == key.site }) ?? true else { continue }
                total.merge(summary)
            }
            total.merge(AppsSummary(sites: sites))
            return total
        }
    }

    // MARK: - Digests

    var digestName: String { "apps-2" }
    /// Its days outlive their records.
    var keptAfterRemoval: Bool { true }

    func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        let segment = AppsAggregates()

        mutating func take(_ record: ReportStore.RecordView) { segment.take(record) }

        func finish() -> [UInt8] {
            let pairs = segment.counts.withLock { $0.map { Pair(key: $0.key, summary: $0.value) } }
            return (try? [UInt8](JSONEncoder().encode(pairs))) ?? []
        }
    }

    private struct Pair: Codable {
        var key: DaySite
        var summary: AppsSummary
    }

    func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        guard let pairs = try? JSONDecoder().decode([Pair].self, from: Data(bytes)) else { return nil }
        let decoded = pairs.map { ($0.key, $0.summary) }
        return { [counts] in
            counts.withLock { counts in
                for (key, summary) in decoded { counts[key, default: AppsSummary(sites: [])].merge(summary) }
            }
        }
    }
}
