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
        // Positional, as `sql` selects them: the rollup's keys, then the count. TabSeparated, since
        // a year of counts can be a hundred thousand groups.
        for row in try scope.tabSeparatedRows(sql(database: scope.database, from: from, to: to)) where row.count == 14 {
            guard let day = Int32(row[0]), let role = ReportRole(rawValue: row[1]), let sourceID = UInt8(row[8]),
                  let triggerData = UInt8(row[11]), let delayBucket = Int(row[12]), let count = Int(row[13]) else { continue }
            let facts = ReportFacts(sourceSite: row[7], sourceID: sourceID, attributedOnSite: row[10], triggerData: triggerData,
                                    hasTokens: row[5] == "1")
            aggregates.add(day: day, role: role, accepted: row[2] == "1", late: row[3] == "1", verifiedToken: row[4] == "1",
                           quarantineReasons: row[6].split(separator: ",").map(String.init), campaign: row[9].isEmpty ? nil : row[9],
                           delayBucket: delayBucket >= 0 ? delayBucket : nil, facts: facts, count: count)
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
