import AppDevelopers
import AppleAds
import Primitives

/// The Apple Ads view: the tokens received in a period (by UTC day) and for a site, counted by
/// where they stand, and the attributed installs by campaign, ad group and keyword with their
/// registered names, and by placement and claim (tap or view). Final tokens are counted from the
/// outbox's tally, kept per day and site as each token settles (`AppleAdsTally`); tokens still
/// waiting from the outbox's memory. The same tokens `/api/apple-ads` lists, so the two agree.
///
/// Apple's Developer Mode answers (`test`) are counted apart and in nothing else: they name no
/// campaign.
struct AppleAdsSummary: Sendable {
    struct Key: Hashable, Comparable, Sendable {
        var campaign: Int64?
        var adGroup: Int64?
        var keyword: Int64?

        static func < (a: Key, b: Key) -> Bool {
            (a.campaign ?? -1, a.adGroup ?? -1, a.keyword ?? -1) < (b.campaign ?? -1, b.adGroup ?? -1, b.keyword ?? -1)
        }
    }

    /// Attributed installs of one campaign, ad group and keyword, by `conversionType`.
    struct Installs: Sendable, Equatable {
        var downloads = 0
        var redownloads = 0
        var preOrders = 0
        var other = 0

        mutating func add(_ conversion: AppleAdsRecord.Conversion, _ count: Int = 1) {
            switch conversion {
            case .download: downloads +|= count
            case .redownload: redownloads +|= count
            case .preOrder: preOrders +|= count
            case .other: other +|= count
            }
        }

        mutating func merge(_ other: Installs) {
            downloads +|= other.downloads
            redownloads +|= other.redownloads
            preOrders +|= other.preOrders
            self.other +|= other.other
        }
    }

    /// Where an attributed install's ad ran, and whether it was tapped or seen.
    struct Placement: Hashable, Comparable, Sendable {
        var placement: AppleAdsPlacement
        var claim: AppleAdsRecord.Claim

        static func < (a: Placement, b: Placement) -> Bool { (a.placement, a.claim) < (b.placement, b.claim) }
    }

    var byStatus: [AppleAdsCallPolicy.Status: Int] = [:]
    var calls = 0
    var installs: [Key: Installs] = [:]
    /// Attributed installs by placement and claim: a handful of cells, whatever Apple answers.
    var placements: [Placement: Int] = [:]
    /// Attributed tokens by the UTC day they came: the overview's Apple Ads line.
    var attributedPerDay: [Int32: Int] = [:]
    /// Attributed installs by `countryOrRegion` (`CountryCode.key`).
    var countries: [String: Int] = [:]

    /// Counts filled in elsewhere (the cluster's, from ClickHouse), or nothing yet.
    init() {}

    /// The period's and site's final tokens from `tally`, and its waiting ones from `pending`.
    init(tally: AppleAdsTally, pending: [AppleAdsOutbox.Entry], query: AppsSummary.Query) {
        self = tally.summary(query)
        for entry in pending {
            let day = SummaryAggregates.day(of: entry.receivedAt)
            guard day >= query.from, day <= query.to, query.reads(entry.site) else { continue }
            add(entry)
            if entry.status == .attributed { attributedPerDay[day, default: 0] += 1 }
        }
    }

    /// Counts one token where it stands.
    mutating func add(_ entry: AppleAdsOutbox.Entry) {
        byStatus[entry.status, default: 0] += 1
        calls += entry.calls
        guard entry.status == .attributed, let record = entry.record else { return }
        addAttributed(record, count: 1)
    }

    mutating func addAttributed(_ record: AppleAdsRecord, count: Int) {
        installs[Key(campaign: record.campaignID, adGroup: record.adGroupID, keyword: record.keywordID), default: Installs()]
            .add(record.conversion, count)
        placements[Placement(placement: record.placement, claim: record.claim), default: 0] +|= count
        countries[CountryCode.key(record.countryOrRegion), default: 0] +|= count
    }

    /// Saturating: a crafted digest's counts must not trap a start.
    mutating func merge(_ other: AppleAdsSummary) {
        for (status, count) in other.byStatus { byStatus[status, default: 0] +|= count }
        calls +|= other.calls
        for (key, row) in other.installs { installs[key, default: Installs()].merge(row) }
        for (key, count) in other.placements { placements[key, default: 0] +|= count }
        for (key, count) in other.countries { countries[key, default: 0] +|= count }
    }

    func json(_ naming: AppleAdsNaming, query: AppsSummary.Query) -> String {
        var out = "{\"from\":\"\(SummaryQuery.text(query.from))\",\"to\":\"\(SummaryQuery.text(query.to))\",\"site\":"
        if let site = query.site { JSONValue.writeString(site, to: &out) } else { out += "null" }
        let counted = AppleAdsCallPolicy.Status.allCases.filter { $0 != .test }
        out += ",\"tokens\":\(counted.reduce(0) { $0 &+ byStatus[$1, default: 0] }),\"calls\":\(calls),\"by_status\":{"
        out += counted.map { "\"\($0.name)\":\(byStatus[$0, default: 0])" }.joined(separator: ",")
        out += "},\"test_payloads\":\(byStatus[.test, default: 0]),\"installs\":["
        out += installs.keys.sorted().map { key in
            let row = installs[key]!
            var line = "{\"campaign_id\":" + (key.campaign.map(String.init) ?? "null") + ",\"campaign_name\":"
            Self.write(naming.campaign(key.campaign), &line)
            line += ",\"ad_group_id\":" + (key.adGroup.map(String.init) ?? "null") + ",\"ad_group_name\":"
            Self.write(naming.adGroup(key.adGroup, campaign: key.campaign), &line)
            line += ",\"keyword_id\":" + (key.keyword.map(String.init) ?? "null") + ",\"keyword_name\":"
            Self.write(naming.keyword(key.keyword, campaign: key.campaign), &line)
            line += ",\"downloads\":\(row.downloads),\"redownloads\":\(row.redownloads),\"pre_orders\":\(row.preOrders),\"other\":\(row.other)}"
            return line
        }.joined(separator: ",")
        out += "],\"placements\":["
        out += placements.keys.sorted().map { key in
            "{\"placement\":\"\(key.placement.name)\",\"label\":\"\(key.placement.label)\",\"claim\":\"\(key.claim.name)\",\"installs\":\(placements[key]!)}"
        }.joined(separator: ",")
        out += "],\"countries\":["
        out += countries.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { country, n in
            var line = "{\"country\":"
            JSONValue.writeString(country, to: &line)
            return line + ",\"installs\":\(n)}"
        }.joined(separator: ",")
        return out + "]}"
    }

    private static func write(_ text: String?, _ out: inout String) {
        if let text { JSONValue.writeString(text, to: &out) } else { out += "null" }
    }
}
