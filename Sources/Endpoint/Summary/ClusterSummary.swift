import ClickHouseExport
import PCM
import Primitives

/// The PCM summary of every node, counted in ClickHouse: the counts the export keeps beside the
/// reports (`pcm_report_counts`, one row per batch and group of everything the summary keeps),
/// read back into `SummaryAggregates`, so that the cluster's page is built by the same code as a
/// node's and counts exactly as it does. Each report is counted once: `FINAL` keeps one batch's
/// counts where a batch reached ClickHouse twice. Reading counts rather than reports keeps a
/// summary over millions of reports to thousands of rows.
///
/// Refused requests are not in ClickHouse (nothing was stored): `rejected_by_rule` is each node's
/// own, on its own page.
enum ClusterSummary {
    static func aggregates(_ scope: ClusterScope, from: Int32, to: Int32) throws -> SummaryAggregates {
        var aggregates = SummaryAggregates()
        for row in try scope.rows(sql(database: scope.database, from: from, to: to)) {
            guard let day = row.int("day").flatMap(Int32.init(exactly:)), let role = row.string("role").flatMap(ReportRole.init(rawValue:)),
                  let sourceID = row.int("source_id").flatMap(UInt8.init(exactly:)),
                  let triggerData = row.int("trigger_data").flatMap(UInt8.init(exactly:)), let count = row.int("n") else { continue }
            let campaign = row.string("campaign").flatMap { $0.isEmpty ? nil : $0 }
            let reasons = (row.string("quarantine_reasons") ?? "").split(separator: ",").map(String.init)
            let facts = ReportFacts(sourceSite: row.string("source_site") ?? "", sourceID: sourceID,
                                    attributedOnSite: row.string("attributed_on_site") ?? "", triggerData: triggerData,
                                    hasTokens: row.int("has_tokens") == 1)
            let bucket = row.int("delay_bucket") ?? -1
            aggregates.add(day: day, role: role, accepted: row.int("accepted") == 1, late: row.int("late") == 1,
                           verifiedToken: row.int("verified") == 1, quarantineReasons: reasons, campaign: campaign,
                           delayBucket: bucket >= 0 ? bucket : nil, facts: facts, count: count)
        }
        return aggregates
    }

    /// The counts of days `from...to`, summed over the batches and nodes they came from.
    static func sql(database: String, from: Int32, to: Int32) -> String {
        let keys = ClickHouseTables.reportCounts.keys.map(\.name).joined(separator: ", ")
        return """
            SELECT \(keys), sum(records) AS n
            FROM \(database).\(ClickHouseTables.reportCounts.name) FINAL
            WHERE day >= \(from) AND day <= \(to)
            GROUP BY \(keys)
            """
    }
}
