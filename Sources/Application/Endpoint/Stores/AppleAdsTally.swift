import AppleAds
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

    /// The last UTC day `site` had Apple's Developer Mode answer, as the settled tokens say: what a
    /// start that took its digests still knows of it.
    func lastTestDay(site: String) -> Int32? {
        counts.filter { $0.key.site == site && $0.value.byStatus[.test, default: 0] > 0 }.map(\.key.day).max()
    }

    /// Counts a whole summary as one day's and site's (a test's, or a merge's).
    mutating func add(_ summary: AppleAdsSummary, day: Int32, site: String) {
        counts[DaySite(day: day, site: site), default: AppleAdsSummary()].merge(summary)
    }

    /// The final tokens of the query's days and site.
    func summary(_ query: AppsSummary.Query) -> AppleAdsSummary {
        var total = AppleAdsSummary()
        for (key, summary) in counts where key.day >= query.from && key.day <= query.to && query.reads(key.site) {
            total.merge(summary)
            total.attributedPerDay[key.day, default: 0] +|= summary.byStatus[.attributed, default: 0]
        }
        return total
    }
}

extension AppleAdsTally {
    mutating func merge(_ other: AppleAdsTally) {
        for (key, summary) in other.counts { counts[key, default: AppleAdsSummary()].merge(summary) }
    }

    /// `u32 count · (i32 day · u8 length · site · u8 statuses · (u8 status · u64 count)* · u64 calls ·
    /// u32 installs · (u8 which ids are there · i64 campaign · i64 ad group · i64 keyword · u64
    /// downloads · u64 redownloads · u64 pre-orders · u64 other)* · u8 placements · (u8 placement ·
    /// u8 claim · u64 count)* · u16 countries · (u8 length · country · u64 count)*)*`, for a
    /// segment's digest (`apple-ads-3`; 2 had no countries).
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendLE(UInt32(counts.count))
        for (key, summary) in counts.sorted(by: { ($0.key.day, $0.key.site) < ($1.key.day, $1.key.site) }) {
            out.appendLE(key.day)
            let site = Array(key.site.utf8.prefix(255))
            out.append(UInt8(site.count))
            out.append(contentsOf: site)
            out.append(UInt8(summary.byStatus.count))
            for (status, count) in summary.byStatus.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                out.append(status.rawValue)
                out.appendLE(UInt64(count))
            }
            out.appendLE(UInt64(summary.calls))
            out.appendLE(UInt32(summary.installs.count))
            for (install, row) in summary.installs.sorted(by: { $0.key < $1.key }) {
                out.append((install.campaign == nil ? 0 : 1) | (install.adGroup == nil ? 0 : 2) | (install.keyword == nil ? 0 : 4))
                for id in [install.campaign, install.adGroup, install.keyword] { out.appendLE(id ?? 0) }
                for n in [row.downloads, row.redownloads, row.preOrders, row.other] { out.appendLE(UInt64(n)) }
            }
            // Six placements by three claims: never more than 18.
            out.append(UInt8(clamping: summary.placements.count))
            for (key, n) in summary.placements.sorted(by: { $0.key < $1.key }).prefix(255) {
                out.append(key.placement.rawValue)
                out.append(key.claim.rawValue)
                out.appendLE(UInt64(n))
            }
            // Two-letter codes and two words (`CountryCode.key`): a few hundred at most.
            out.appendLE(UInt16(clamping: summary.countries.count))
            for (country, n) in summary.countries.sorted(by: { $0.key < $1.key }).prefix(Int(UInt16.max)) {
                let bytes = Array(country.utf8.prefix(255))
                out.append(UInt8(bytes.count))
                out.append(contentsOf: bytes)
                out.appendLE(UInt64(n))
            }
        }
        return out
    }

    /// The tally `bytes[at...]` holds, and where it ends; nil when it is not one.
    static func decode(_ bytes: [UInt8], at start: Int) -> (AppleAdsTally, end: Int)? {
        var at = start
        func need(_ n: Int) -> Bool { at + n <= bytes.count }
        func count(_ value: UInt64) -> Int? { value <= UInt64(Int32.max) * 1024 ? Int(value) : nil }
        guard need(4) else { return nil }
        var tally = AppleAdsTally()
        let entries = Int(bytes.loadLE(UInt32.self, at: at))
        at += 4
        for _ in 0..<entries {
            guard need(5) else { return nil }
            let day = bytes.loadLE(Int32.self, at: at), siteLength = Int(bytes[at + 4])
            at += 5
            guard need(siteLength + 1) else { return nil }
            let site = String(decoding: bytes[at..<(at + siteLength)], as: UTF8.self)
            at += siteLength
            var summary = AppleAdsSummary()
            let statuses = Int(bytes[at])
            at += 1
            for _ in 0..<statuses {
                guard need(9), let status = AppleAdsCallPolicy.Status(rawValue: bytes[at]),
                      let n = count(bytes.loadLE(UInt64.self, at: at + 1)) else { return nil }
                summary.byStatus[status] = n
                at += 9
            }
            guard need(12), let calls = count(bytes.loadLE(UInt64.self, at: at)) else { return nil }
            summary.calls = calls
            let installs = Int(bytes.loadLE(UInt32.self, at: at + 8))
            at += 12
            for _ in 0..<installs {
                guard need(57) else { return nil }
                let which = bytes[at]
                let ids = (0..<3).map { bytes.loadLE(Int64.self, at: at + 1 + 8 * $0) }
                let rows = (0..<4).map { count(bytes.loadLE(UInt64.self, at: at + 25 + 8 * $0)) }
                guard let downloads = rows[0], let redownloads = rows[1], let preOrders = rows[2], let other = rows[3] else { return nil }
                let key = AppleAdsSummary.Key(campaign: which & 1 != 0 ? ids[0] : nil, adGroup: which & 2 != 0 ? ids[1] : nil,
                                              keyword: which & 4 != 0 ? ids[2] : nil)
                summary.installs[key, default: AppleAdsSummary.Installs()]
                    .merge(AppleAdsSummary.Installs(downloads: downloads, redownloads: redownloads, preOrders: preOrders, other: other))
                at += 57
            }
            guard need(1) else { return nil }
            let placements = Int(bytes[at])
            at += 1
            for _ in 0..<placements {
                guard need(10), let placement = AppleAdsPlacement(rawValue: bytes[at]), let claim = AppleAdsRecord.Claim(rawValue: bytes[at + 1]),
                      let n = count(bytes.loadLE(UInt64.self, at: at + 2)) else { return nil }
                summary.placements[AppleAdsSummary.Placement(placement: placement, claim: claim), default: 0] +|= n
                at += 10
            }
            guard need(2) else { return nil }
            let countries = Int(bytes.loadLE(UInt16.self, at: at))
            at += 2
            for _ in 0..<countries {
                guard need(1) else { return nil }
                let length = Int(bytes[at])
                guard need(1 + length + 8), let n = count(bytes.loadLE(UInt64.self, at: at + 1 + length)) else { return nil }
                // Keyed by the same rule as when it was counted, whatever a damaged digest holds.
                let text = String(decoding: bytes[(at + 1)..<(at + 1 + length)], as: UTF8.self)
                let key = text == CountryCode.notSent || text == CountryCode.unreadable ? text : CountryCode.key(text)
                summary.countries[key, default: 0] +|= n
                at += 1 + length + 8
            }
            tally.counts[DaySite(day: day, site: site), default: AppleAdsSummary()].merge(summary)
        }
        return (tally, at)
    }
}
