import AppDevelopers
import AppleAds
import Primitives

/// The Apple Ads view: the tokens received in a period (by UTC day) and for a site, counted by
/// where they stand, and the attributed installs by campaign, ad group and keyword with their
/// registered names. Final tokens are counted from the outbox's tally, kept per day and site as
/// each token settles (`AppleAdsTally`); tokens still waiting from the outbox's memory. The same
/// tokens `/api/apple-ads` lists, so the two agree.
struct AppleAdsSummary: Sendable {
    struct Key: Hashable, Comparable, Sendable {
        var campaign: Int64?
        var adGroup: Int64?
        var keyword: Int64?

        static func < (a: Key, b: Key) -> Bool {
            (a.campaign ?? -1, a.adGroup ?? -1, a.keyword ?? -1) < (b.campaign ?? -1, b.adGroup ?? -1, b.keyword ?? -1)
        }
    }

    var byStatus: [AppleAdsCallPolicy.Status: Int] = [:]
    var calls = 0
    var installs: [Key: (downloads: Int, redownloads: Int, other: Int)] = [:]
    /// Attributed tokens by the UTC day they came: the overview's Apple Ads line.
    var attributedPerDay: [Int32: Int] = [:]

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
        let key = Key(campaign: record.campaignID, adGroup: record.adGroupID, keyword: record.keywordID)
        var row = installs[key] ?? (0, 0, 0)
        switch record.conversionType {
        case "Download": row.downloads += 1
        case "Redownload": row.redownloads += 1
        default: row.other += 1
        }
        installs[key] = row
    }

    /// Saturating: a crafted digest's counts must not trap a start.
    mutating func merge(_ other: AppleAdsSummary) {
        for (status, count) in other.byStatus { byStatus[status, default: 0] +|= count }
        calls +|= other.calls
        for (key, row) in other.installs {
            var mine = installs[key] ?? (0, 0, 0)
            mine.downloads +|= row.downloads
            mine.redownloads +|= row.redownloads
            mine.other +|= row.other
            installs[key] = mine
        }
    }

    func json(_ registry: AppRegistry, query: AppsSummary.Query) -> String {
        var out = "{\"from\":\"\(SummaryQuery.text(query.from))\",\"to\":\"\(SummaryQuery.text(query.to))\",\"site\":"
        if let site = query.site { JSONValue.writeString(site, to: &out) } else { out += "null" }
        out += ",\"tokens\":\(byStatus.values.reduce(0, +)),\"calls\":\(calls),\"by_status\":{"
        out += AppleAdsCallPolicy.Status.allCases.map { "\"\($0.name)\":\(byStatus[$0, default: 0])" }.joined(separator: ",")
        out += "},\"installs\":["
        out += installs.keys.sorted().map { key in
            let row = installs[key]!
            let campaign = registry.appleAdsCampaign(id: key.campaign)
            var line = "{\"campaign_id\":" + (key.campaign.map(String.init) ?? "null") + ",\"campaign_name\":"
            Self.write(campaign?.name, &line)
            line += ",\"ad_group_id\":" + (key.adGroup.map(String.init) ?? "null") + ",\"ad_group_name\":"
            Self.write(campaign?.adGroupName(key.adGroup), &line)
            line += ",\"keyword_id\":" + (key.keyword.map(String.init) ?? "null") + ",\"keyword_name\":"
            Self.write(campaign?.keywordName(key.keyword), &line)
            line += ",\"downloads\":\(row.downloads),\"redownloads\":\(row.redownloads),\"other\":\(row.other)}"
            return line
        }.joined(separator: ",")
        return out + "]}"
    }

    private static func write(_ text: String?, _ out: inout String) {
        if let text { JSONValue.writeString(text, to: &out) } else { out += "null" }
    }
}
