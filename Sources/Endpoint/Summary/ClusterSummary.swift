import ClickHouseExport
import PCM
import Primitives

/// The PCM summary of every node, counted in ClickHouse: the reports grouped by everything the
/// summary keeps, read back into `SummaryAggregates`, so that the cluster's page is built by the
/// same code as a node's and counts exactly as it does. Each report is counted once: `FINAL`
/// folds a batch that reached ClickHouse twice.
///
/// Refused requests are not in ClickHouse (nothing was stored): `rejected_by_rule` is each node's
/// own, on its own page.
enum ClusterSummary {
    static func aggregates(_ scope: ClusterScope, from: Int32, to: Int32) throws -> SummaryAggregates {
        var aggregates = SummaryAggregates()
        for row in try scope.rows(sql(database: scope.database, from: from, to: to)) {
            guard let day = row.int("day").flatMap(Int32.init(exactly:)), let role = row.string("role").flatMap(ReportRole.init(rawValue:)),
                  let sourceID = row.int("sid").flatMap(UInt8.init(exactly:)), let triggerData = row.int("td").flatMap(UInt8.init(exactly:)),
                  let count = row.int("n") else { continue }
            let campaign = row.string("campaign").flatMap { $0.isEmpty ? nil : $0 }
            let facts = ReportFacts(sourceSite: row.string("source_site") ?? "", sourceID: sourceID,
                                    attributedOnSite: row.string("attributed_on_site") ?? "", triggerData: triggerData,
                                    hasTokens: row.int("has_tokens") == 1)
            aggregates.add(day: day, role: role, accepted: row.string("verdict") == "accepted", reasons: row.strings("reasons"),
                           campaign: campaign, delayHours: row.int("triggered") == 1 ? row.int("delay") : nil, facts: facts, count: count)
        }
        return aggregates
    }

    /// The reports of days `from...to`, grouped by everything the summary keeps.
    static func sql(database: String, from: Int32, to: Int32) -> String {
        """
        SELECT intDiv(received_at_ms, 86400000) AS day, role, verdict, reasons, source_site, ifNull(source_id, 0) AS sid, campaign,
               attributed_on_site, ifNull(trigger_data, 0) AS td, has_tokens, isNotNull(trigger_recorded_at_ms) AS triggered,
               intDiv(toInt64(received_at_ms) - toInt64(ifNull(trigger_recorded_at_ms, 0)), 3600000) AS delay, count() AS n
        FROM \(database).pcm_reports FINAL
        WHERE \(ClusterScope.period(from: from, to: to))
        GROUP BY day, role, verdict, reasons, source_site, sid, campaign, attributed_on_site, td, has_tokens, triggered, delay
        """
    }
}
