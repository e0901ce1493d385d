import AppleAds
import ClickHouseExport

/// The Apple Ads view of every node, counted in ClickHouse: each token (by the day it came) with
/// where its latest call left it, as a node's outbox keeps it, read into `AppleAdsSummary`.
enum ClusterAppleAdsSummary {
    /// The tokens of the period grouped by where their latest call left them. A token's calls are
    /// its node's: (node, token id) names it. Before its first call it is pending.
    static func sql(database db: String, query: AppsSummary.Query) -> String {
        let site = query.sqlSiteCondition
        return """
            SELECT status, campaign, ad_group, keyword, conversion, day, sum(calls) AS call_count, count() AS n
            FROM (SELECT node, id AS token_id, site, intDiv(received_at_ms, 86400000) AS day FROM \(db).apple_ads_tokens FINAL
                  WHERE \(ClusterScope.period(from: query.from, to: query.to))\(site)) AS tokens
            ANY LEFT JOIN (
                SELECT node, token_id, argMax(status, id) AS status, countIf(called = 1) AS calls,
                       argMax(campaignId, id) AS campaign, argMax(adGroupId, id) AS ad_group,
                       argMax(keywordId, id) AS keyword, argMax(conversionType, id) AS conversion
                FROM \(db).apple_ads_calls FINAL GROUP BY node, token_id
            ) AS latest_calls USING (node, token_id)
            GROUP BY status, campaign, ad_group, keyword, conversion, day
            """
    }

    static func summary(_ scope: ClusterScope, query: AppsSummary.Query) throws -> AppleAdsSummary {
        let rows = try scope.rows(sql(database: scope.database, query: query))
        var summary = AppleAdsSummary()
        for row in rows {
            let count = row.int("n") ?? 0
            let text = row.string("status") ?? ""
            let status = AppleAdsCallPolicy.Status.allCases.first { $0.name == text } ?? .pending
            summary.byStatus[status, default: 0] += count
            summary.calls += row.int("call_count") ?? 0
            guard status == .attributed else { continue }
            if let day = row.int("day").flatMap({ Int32(exactly: $0) }) { summary.attributedPerDay[day, default: 0] += count }
            let key = AppleAdsSummary.Key(campaign: row.string("campaign").flatMap { Int64($0) }, adGroup: row.string("ad_group").flatMap { Int64($0) },
                                          keyword: row.string("keyword").flatMap { Int64($0) })
            var installs = summary.installs[key] ?? (0, 0, 0)
            switch row.string("conversion") {
            case "Download": installs.downloads += count
            case "Redownload": installs.redownloads += count
            default: installs.other += count
            }
            summary.installs[key] = installs
        }
        return summary
    }
}
