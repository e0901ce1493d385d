import AppDevelopers
import ClickHouseExport

/// The Apps view of every node, counted in ClickHouse and read into `AppsSummary`, so that it
/// counts as a node's view does.
///
/// A device retries a postback until one delivery is answered; during a failover two deliveries
/// of one postback can reach two nodes, and each stores it. Across the cluster it is one
/// postback: the same duplicate key and content, stored first on one node, and the later copy is
/// a duplicate received, as a retry on one node is.
enum ClusterAppsSummary {
    static let fields = [("postback-sequence-index", "psi"), ("source-identifier", "sident"), ("conversion-value", "cv"),
                         ("coarse-conversion-value", "ccv"), ("fidelity-type", "ft"), ("ad-interaction-type", "ait"),
                         ("did-win", "dw"), ("redownload", "rd"), ("conversion-type", "ct"), ("ad-network-id", "anid"),
                         ("ad-network-identifier", "anident"), ("campaign-id", "cid"), ("app-id", "aid"),
                         ("advertised-item-identifier", "aii"), ("country-code", "cc")]
    /// Stored as 0 and 1 (ClickHouse 18.16 has no Bool); read back as the text a body's `true` gives.
    static let booleans: Set<String> = ["did-win", "redownload"]

    /// The statements, in order: the postbacks grouped (one per duplicate key and content), the
    /// retries of those stored in the period, the copies stored on a second node.
    static func sql(database db: String, query: AppsSummary.Query) -> [String] {
        let period = ClusterScope.period(from: query.from, to: query.to)
        let site = query.sqlSiteCondition
        let columns = fields.map { "`\($0.0)` AS \($0.1)" }.joined(separator: ", ")
        let keys = fields.map(\.1).joined(separator: ", ")
        return ["""
            SELECT protocol, site, verdict, reasons, signature, \(columns), schema_version AS sv, schema_ambiguous_versions AS sav,
                   intDiv(received_at_ms, 86400000) AS day, count() AS n
            FROM (SELECT * FROM \(db).postbacks FINAL WHERE \(period) ORDER BY received_at_ms, node, id LIMIT 1 BY duplicate_key, content_hash)
            GROUP BY protocol, site, verdict, reasons, signature, \(keys), sv, sav, day
            """, """
            SELECT count() AS n FROM \(db).postback_retries FINAL
            WHERE (node, retry_of) IN (SELECT node, id FROM \(db).postbacks FINAL WHERE \(period)\(site))
            """, """
            SELECT count() - uniqExact(duplicate_key, content_hash) AS n FROM \(db).postbacks FINAL WHERE \(period)\(site)
            """]
    }

    /// With `registry`, the estimated revenue of each day too, as `AppsAggregates.summary`.
    static func summary(_ scope: ClusterScope, query: AppsSummary.Query, registry: AppRegistry? = nil) throws -> AppsSummary {
        let statements = sql(database: scope.database, query: query)
        let grouped = try scope.rows(statements[0])
        var summary = AppsSummary(sites: Set(grouped.compactMap { $0.string("site") }.filter { query.readableSites?.contains($0) ?? true }))
        for row in grouped where query.reads(row.string("site") ?? "") {
            let facts = AppsSummary.Facts(skadnetwork: row.string("protocol") == "skadnetwork", accepted: row.string("verdict") == "accepted",
                                          reasons: row.strings("reasons"), signature: row.string("signature") ?? "",
                                          development: row.string("signature") == "apple_development") { key in
                guard let alias = fields.first(where: { $0.0 == key })?.1, let value = row.string(alias), !value.isEmpty else { return nil }
                return booleans.contains(key) ? (value == "1" ? "true" : "false") : value
            }
            let n = row.int("n") ?? 0
            let key = summary.add(facts, retries: 0, count: n, schema: schemaReading(version: row.int("sv"), ambiguous: row.string("sav")).code)
            guard let day = row.int("day").flatMap({ Int32(exactly: $0) }) else { continue }
            if let kind = AppsSummary.conversionKind(facts, count: n) { summary.addPerDay(day, kind) }
            if let key, let registry { summary.addRevenue(day: day, key: key, postbacks: n, registry: registry) }
        }
        if summary.perDay == nil { summary.perDay = [:] }
        // Deliveries that came again: retries on the node that stored the postback, and copies
        // stored by another node.
        let retries = try scope.rows(statements[1]).first?.int("n") ?? 0
        let copies = try scope.rows(statements[2]).first?.int("n") ?? 0
        summary.addDuplicates(retries + copies)
        return summary
    }

    /// The exported `schema_version` and `schema_ambiguous_versions` as the node's reading: none
    /// (a row exported before its app had a schema) is before any version, as on the node.
    static func schemaReading(version: Int?, ambiguous: String?) -> SchemaReading {
        if let version, version > 0 { return .version(version) }
        let bounds = (ambiguous ?? "").split(separator: "-").compactMap { Int($0) }
        return bounds.count == 2 ? .ambiguous(bounds[0], bounds[1]) : .beforeAnyVersion
    }
}
