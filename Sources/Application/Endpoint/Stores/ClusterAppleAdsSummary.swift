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
            SELECT status, org, campaign, ad_group, keyword, ad, conversion, claim, placement, country, day, sum(calls) AS call_count, count() AS n
            FROM (SELECT node, id AS token_id, site, intDiv(received_at_ms, 86400000) AS day FROM \(db).apple_ads_tokens FINAL
                  WHERE \(ClusterScope.period(from: query.from, to: query.to))\(site)) AS tokens
            ANY LEFT JOIN (
                SELECT node, token_id, argMax(status, id) AS status, countIf(called = 1) AS calls,
                       argMax(orgId, id) AS org, argMax(campaignId, id) AS campaign, argMax(adGroupId, id) AS ad_group,
                       argMax(keywordId, id) AS keyword, argMax(adId, id) AS ad, argMax(conversionType, id) AS conversion,
                       argMax(claimType, id) AS claim, argMax(supplyPlacement, id) AS placement,
                       argMax(countryOrRegion, id) AS country
                FROM \(db).apple_ads_calls FINAL GROUP BY node, token_id
            ) AS latest_calls USING (node, token_id)
            GROUP BY status, org, campaign, ad_group, keyword, ad, conversion, claim, placement, country, day
            """
    }

    static func summary(_ scope: ClusterScope, query: AppsSummary.Query) throws -> AppleAdsSummary {
        let rows = try scope.rows(sql(database: scope.database, query: query))
        var summary = AppleAdsSummary()
        for row in rows {
            let count = row.int("n") ?? 0
            let statusName = row.string("status") ?? ""
            func id(_ name: String) -> Int64? { row.string(name).flatMap { Int64($0) } }
            func text(_ name: String) -> String? { row.string(name).flatMap { $0.isEmpty ? nil : $0 } }
            let record = AppleAdsRecord(attribution: statusName == "attributed", orgID: id("org"), campaignID: id("campaign"), adGroupID: id("ad_group"),
                                        keywordID: id("keyword"), adID: id("ad"), conversionType: text("conversion"), claimType: text("claim"),
                                        countryOrRegion: text("country"), supplyPlacement: text("placement"))
            var status = AppleAdsCallPolicy.Status.allCases.first { $0.name == statusName } ?? .pending
            // Written as attributed by a node from before the test answer was known: as the node reads it.
            if status == .attributed && record.isTestPayload { status = .test }
            summary.byStatus[status, default: 0] += count
            summary.calls += row.int("call_count") ?? 0
            guard status == .attributed else { continue }
            if let day = row.int("day").flatMap({ Int32(exactly: $0) }) { summary.attributedPerDay[day, default: 0] += count }
            summary.addAttributed(record, count: count)
        }
        return summary
    }
}
