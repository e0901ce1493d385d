import Primitives

/// The final Apple Ads tokens, counted per UTC day of their arrival and site as each settles:
/// what the Apple Ads view reads once the outbox has forgotten them. Its size follows the days
/// and sites, not the tokens.
struct AppleAdsTally: Sendable {
    private struct DaySite: Hashable {
        var day: Int32
        var site: String
    }

    private var counts: [DaySite: AppleAdsSummary] = [:]

    /// Counts a token that has just become final (or was found final in the log).
    mutating func add(_ entry: AppleAdsOutbox.Entry) {
        counts[DaySite(day: SummaryAggregates.day(of: entry.receivedAt), site: entry.site), default: AppleAdsSummary()].add(entry)
    }

    /// The final tokens of the query's days and site.
    func summary(_ query: AppsSummary.Query) -> AppleAdsSummary {
        var total = AppleAdsSummary()
        for (key, summary) in counts where key.day >= query.from && key.day <= query.to && (query.site.map { $0 == key.site } ?? true) {
            total.merge(summary)
        }
        return total
    }
}
