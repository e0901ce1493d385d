import Primitives

/// One day's conversions at one site, by ad network, campaign and app as numbers (`NameNumbers`)
/// with 32-bit counts: 24 bytes a row once the day is over (`freeze`), where strings keyed to a
/// dictionary of kinds took about 400. A top app's day can hold 10,000 campaigns (a four-digit
/// `source-identifier` per ad network), and a year keeps every day.
struct ConversionTable {
    struct Key: Hashable, Comparable {
        var network: UInt32
        var campaign: UInt32
        var app: UInt32

        static func < (a: Key, b: Key) -> Bool { (a.network, a.campaign, a.app) < (b.network, b.campaign, b.app) }
    }

    struct Counts {
        var installs: UInt32 = 0
        var redownloads: UInt32 = 0
        var reEngagements: UInt32 = 0

        init(_ counts: AppsSummary.ConversionCounts) {
            installs = UInt32(clamping: counts.installs)
            redownloads = UInt32(clamping: counts.redownloads)
            reEngagements = UInt32(clamping: counts.reEngagements)
        }

        /// Saturating: no day holds four billion installs of one campaign, and a forged digest
        /// must not trap.
        mutating func add(_ other: Counts) {
            installs +|= other.installs
            redownloads +|= other.redownloads
            reEngagements +|= other.reEngagements
        }

        var summary: AppsSummary.ConversionCounts {
            AppsSummary.ConversionCounts(installs: Int(installs), redownloads: Int(redownloads), reEngagements: Int(reEngagements))
        }
    }

    private struct Row {
        var key: Key
        var counts: Counts
    }

    /// Rows of a day still being counted.
    private var open: [Key: Counts] = [:]
    /// Rows of a day over, sorted by key.
    private var frozen: [Row] = []

    mutating func add(_ key: Key, _ counts: Counts) {
        if let i = frozenIndex(of: key) {
            frozen[i].counts.add(counts)
        } else {
            open[key, default: Counts(AppsSummary.ConversionCounts())].add(counts)
        }
    }

    /// Moves the open rows into the sorted array: for a day no postback is stored on any more.
    mutating func freeze() {
        guard !open.isEmpty else { return }
        var rows = frozen
        rows.reserveCapacity(frozen.count + open.count)
        for (key, counts) in open { rows.append(Row(key: key, counts: counts)) }
        rows.sort { $0.key < $1.key }
        frozen = rows
        open = [:]
    }

    func forEach(_ visit: (Key, Counts) -> Void) {
        for row in frozen { visit(row.key, row.counts) }
        for (key, counts) in open { visit(key, counts) }
    }

    private func frozenIndex(of key: Key) -> Int? {
        var low = 0, high = frozen.count
        while low < high {
            let mid = (low + high) / 2
            if frozen[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low < frozen.count && frozen[low].key == key ? low : nil
    }
}
