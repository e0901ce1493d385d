import PCM
import Primitives
import SiteOwners
import Foundation

/// The summary API's answer for one site, period and role, built from `SummaryAggregates`.
///
/// Source copies and destination copies are always counted apart: one conversion sends one of
/// each, so adding them would count it twice.
struct SummaryQuery: Sendable, Equatable {
    var site: String?
    var from: Int32
    var to: Int32
    var role: ReportRole?
    /// The sites a viewer token may read; nil: every site.
    var readableSites: Set<String>? = nil

    /// `?site=&from=YYYY-MM-DD&to=YYYY-MM-DD&role=source|destination`; the period defaults to
    /// the 30 days up to `today`.
    static func parse(_ items: [(name: String, value: String)], today: Int32) -> Result<SummaryQuery, Problem> {
        var query = SummaryQuery(site: nil, from: today - 29, to: today, role: nil)
        for (name, value) in items {
            switch name {
            case "site": query.site = value.isEmpty ? nil : value
            // The advertiser narrows the scope (`AccessControl.readScope`), not the query.
            case "advertiser": continue
            case "from", "to":
                guard let day = Self.day(value) else {
                    return .failure(Problem(status: 400, rule: "invalid_date", field: name, detail: "\(name) must be a date such as 2026-11-20"))
                }
                if name == "from" { query.from = day } else { query.to = day }
            case "role":
                switch value {
                case "", "all": query.role = nil
                case "source": query.role = .source
                case "destination": query.role = .destination
                default: return .failure(Problem(status: 400, rule: "invalid_role", field: "role", detail: "role must be source, destination or all"))
                }
            default:
                return .failure(Problem(status: 400, rule: "unknown_parameter", field: name,
                                        detail: "unknown query parameter \"\(name)\"; use advertiser, site, from, to and role"))
            }
        }
        guard query.from <= query.to else {
            return .failure(Problem(status: 400, rule: "invalid_period", field: "to", detail: "to must not be before from"))
        }
        guard query.to - query.from < 3660 else {
            return .failure(Problem(status: 400, rule: "invalid_period", field: "from", detail: "a period is at most ten years"))
        }
        return .success(query)
    }

    static func day(_ text: String) -> Int32? {
        guard text.utf8.count == 10, let t = Timestamp(rfc3339: text + "T00:00:00Z") else { return nil }
        return SummaryAggregates.day(of: t)
    }

    static func text(_ day: Int32) -> String {
        String(Timestamp(millisecondsSinceEpoch: Int64(day) * TimingModel.day).rfc3339.prefix(10))
    }
}

/// Counts by role, as the page shows them: source and destination side by side.
struct RoleCounts: Sendable, Equatable {
    var source = 0
    var destination = 0

    mutating func add(_ role: ReportRole, _ n: Int) {
        if role == .source { source += n } else { destination += n }
    }

    func json() -> String { "{\"source\":\(source),\"destination\":\(destination)}" }
}

/// The page's tables summed by interned keys, before they are named.
struct SummaryReportSums {
    var campaigns: [SummaryAggregates.CampaignKey: RoleCounts] = [:]
    var conversions: [SummaryAggregates.ConversionKey: RoleCounts] = [:]
    var verifiedCampaigns: [SummaryAggregates.CampaignKey: RoleCounts] = [:]
    var verifiedConversions: [SummaryAggregates.ConversionKey: RoleCounts] = [:]
}

struct SummaryReport: Sendable {
    struct CampaignRow: Hashable, Sendable { var sourceSite: String; var sourceID: UInt8; var campaign: String? }
    struct ConversionRow: Hashable, Sendable { var destination: String; var triggerData: UInt8 }
    struct CrosstabCell: Hashable, Sendable { var campaign: CampaignRow; var conversion: ConversionRow }

    var query: SummaryQuery
    var sites: [String]
    var accepted = RoleCounts()
    var quarantined = RoleCounts()
    var late = RoleCounts()
    var withTokens = RoleCounts()
    var verifiedTokens = RoleCounts()
    var perDay: [(day: Int32, counts: RoleCounts)] = []
    var byCampaign: [CampaignRow: RoleCounts] = [:]
    var byConversion: [ConversionRow: RoleCounts] = [:]
    /// Of `byCampaign` and `byConversion`, the reports with a verified token.
    var verifiedByCampaign: [CampaignRow: RoleCounts] = [:]
    var verifiedByConversion: [ConversionRow: RoleCounts] = [:]
    var quarantinedByReason: [String: RoleCounts] = [:]
    /// Campaign × conversion: the accepted reports of one copy (`crosstabCopy`), so that each
    /// conversion is counted once.
    var crosstab: [CrosstabCell: Int] = [:]
    var crosstabCopy: ReportRole = .destination
    var delays: [Int] = Array(repeating: 0, count: SummaryAggregates.delayBuckets.count)

    init(_ aggregates: SummaryAggregates, _ query: SummaryQuery) {
        self.query = query
        sites = aggregates.sites.map(aggregates.name).filter { query.readableSites?.contains($0) ?? true }.sorted()
        // A site with no reports yet matches nothing; nil means every site.
        let site: SummaryAggregates.Name?? = query.site.map { aggregates.id(of: $0) }
        let readable: Set<SummaryAggregates.Name>? = query.readableSites.map { Set($0.compactMap(aggregates.id(of:))) }
        func matches(_ owner: SummaryAggregates.SiteRole) -> Bool {
            if let site, owner.site != site { return false }
            if let readable, !readable.contains(owner.site) { return false }
            return query.role == nil || query.role == owner.role
        }
        /// The campaign's name if the reader is shown it on a report sent to `site` (`NameDisclosure`).
        func campaignName(_ campaign: SummaryAggregates.Name?, of sourceSite: SummaryAggregates.Name,
                          sentTo site: SummaryAggregates.Name) -> SummaryAggregates.Name? {
            guard let campaign, NameDisclosure.campaign(sourceSite: aggregates.name(sourceSite), onReportSentTo: aggregates.name(site),
                                                        to: query.readableSites) else { return nil }
            return campaign
        }
        // Summed by interned keys first, named once at the end.
        var sums = SummaryReportSums()
        var reasons: [SummaryAggregates.Name: RoleCounts] = [:]
        var acceptedPerDay: [Int32: RoleCounts] = [:]
        for (d, day) in aggregates.days(in: query.from...query.to) {
            for (owner, t) in day.totals where matches(owner) {
                accepted.add(owner.role, t.accepted)
                acceptedPerDay[d, default: RoleCounts()].add(owner.role, t.accepted)
                quarantined.add(owner.role, t.quarantined)
                late.add(owner.role, t.late)
                withTokens.add(owner.role, t.withTokens)
                verifiedTokens.add(owner.role, t.verified)
            }
            // Rows are per campaign (or conversion) over the chosen sites: the owner is dropped
            // from the key, its role kept as the column.
            // A campaign's name is kept only where the reader is shown it (`NameDisclosure`),
            // which depends on the site the report was sent to: decided before the owner goes.
            for (counts, into) in [(day.campaigns, \SummaryReportSums.campaigns), (day.verifiedCampaigns, \SummaryReportSums.verifiedCampaigns)] {
                for (key, n) in counts where matches(key.owner) {
                    var plain = key
                    plain.campaign = campaignName(key.campaign, of: key.sourceSite, sentTo: key.owner.site)
                    plain.owner = SummaryAggregates.SiteRole(site: 0, role: .source)
                    sums[keyPath: into][plain, default: RoleCounts()].add(key.owner.role, n)
                }
            }
            for (counts, into) in [(day.conversions, \SummaryReportSums.conversions), (day.verifiedConversions, \SummaryReportSums.verifiedConversions)] {
                for (key, n) in counts where matches(key.owner) {
                    var plain = key
                    plain.owner = SummaryAggregates.SiteRole(site: 0, role: .source)
                    sums[keyPath: into][plain, default: RoleCounts()].add(key.owner.role, n)
                }
            }
            for (key, n) in day.quarantineReasons where matches(key.owner) { reasons[key.reason, default: RoleCounts()].add(key.owner.role, n) }
            for (key, n) in day.delays where matches(key.owner) { delays[key.bucket] += n }
        }
        func campaignRow(_ key: SummaryAggregates.CampaignKey) -> CampaignRow {
            CampaignRow(sourceSite: aggregates.name(key.sourceSite), sourceID: key.sourceID, campaign: key.campaign.map(aggregates.name))
        }
        func conversionRow(_ key: SummaryAggregates.ConversionKey) -> ConversionRow {
            ConversionRow(destination: aggregates.name(key.destination), triggerData: key.triggerData)
        }
        for (key, counts) in sums.campaigns { byCampaign[campaignRow(key)] = counts }
        for (key, counts) in sums.verifiedCampaigns { verifiedByCampaign[campaignRow(key)] = counts }
        for (key, counts) in sums.conversions { byConversion[conversionRow(key)] = counts }
        for (key, counts) in sums.verifiedConversions { verifiedByConversion[conversionRow(key)] = counts }
        for (reason, counts) in reasons { quarantinedByReason[aggregates.name(reason)] = counts }
        // One copy of each conversion: the one asked for, else the advertiser's (destination) copy,
        // else, in a view that holds only publishers' copies, the source copy.
        crosstabCopy = query.role ?? (accepted.destination > 0 || accepted.source == 0 ? .destination : .source)
        var cells: [SummaryAggregates.Group: Int] = [:]
        for (_, day) in aggregates.days(in: query.from...query.to) {
            for (g, n) in day.groups where g.accepted && g.role == crosstabCopy && matches(SummaryAggregates.SiteRole(site: g.site, role: g.role)) {
                var key = g
                key.late = false
                cells[key, default: 0] += n
            }
        }
        for (g, n) in cells {
            let site = aggregates.name(g.sourceSite)
            let cell = CrosstabCell(campaign: CampaignRow(sourceSite: site, sourceID: g.sourceID,
                                                          campaign: campaignName(g.campaign, of: g.sourceSite, sentTo: g.site).map(aggregates.name)),
                                    conversion: ConversionRow(destination: aggregates.name(g.destination), triggerData: g.triggerData))
            crosstab[cell, default: 0] += n
        }
        // Every day of the period, zeros included, so that the chart's axis is the period.
        perDay = (query.from...query.to).map { ($0, acceptedPerDay[$0] ?? RoleCounts()) }
    }

    /// The JSON the page reads. `registry` names campaigns' conversions; `rejections` are counted
    /// since start, of the sites the query reads (a refusal is kept with the served site it was sent to).
    func json(registry: Registry, rejections: [String: Int]) -> String {
        var out = "{\"site\":"
        if let site = query.site { JSONValue.writeString(site, to: &out) } else { out += "null" }
        out += ",\"from\":\"\(SummaryQuery.text(query.from))\",\"to\":\"\(SummaryQuery.text(query.to))\",\"role\":"
        out += query.role.map { "\"\($0.rawValue)\"" } ?? "null"
        out += ",\"sites\":[" + sites.map { s in var t = ""; JSONValue.writeString(s, to: &t); return t }.joined(separator: ",") + "]"
        out += ",\"accepted\":\(accepted.json()),\"quarantined\":\(quarantined.json()),\"late\":\(late.json())"
        out += ",\"per_day\":[" + perDay.map { "{\"day\":\"\(SummaryQuery.text($0.day))\",\"source\":\($0.counts.source),\"destination\":\($0.counts.destination)}" }.joined(separator: ",") + "]"
        out += ",\"by_campaign\":[" + byCampaign.sorted { ($0.key.sourceSite, $0.key.sourceID, $0.key.campaign ?? "") < ($1.key.sourceSite, $1.key.sourceID, $1.key.campaign ?? "") }.map { row, counts in
            var o = "{\"source_site\":"
            JSONValue.writeString(row.sourceSite, to: &o)
            o += ",\"source_id\":\(row.sourceID),\"campaign\":"
            if let c = row.campaign { JSONValue.writeString(c, to: &o) } else { o += "null" }
            return o + ",\"source\":\(counts.source),\"destination\":\(counts.destination),\"verified_tokens\":\((verifiedByCampaign[row] ?? RoleCounts()).json())}"
        }.joined(separator: ",") + "]"
        out += ",\"by_conversion\":[" + byConversion.sorted { ($0.key.destination, $0.key.triggerData) < ($1.key.destination, $1.key.triggerData) }.map { row, counts in
            var o = "{\"site\":"
            JSONValue.writeString(row.destination, to: &o)
            o += ",\"trigger_data\":\(row.triggerData),\"conversion\":"
            if let name = registry.conversions(site: row.destination, triggerData: row.triggerData).first?.name {
                JSONValue.writeString(name, to: &o)
            } else { o += "null" }
            return o + ",\"source\":\(counts.source),\"destination\":\(counts.destination),\"verified_tokens\":\((verifiedByConversion[row] ?? RoleCounts()).json())}"
        }.joined(separator: ",") + "]"
        out += ",\"crosstab\":" + crosstabJSON(registry: registry)
        out += ",\"quarantined_by_reason\":[" + quarantinedByReason.sorted { $0.key < $1.key }.map { reason, counts in
            "{\"reason\":\"\(reason)\",\"source\":\(counts.source),\"destination\":\(counts.destination)}"
        }.joined(separator: ",") + "]"
        out += ",\"rejected_by_rule\":[" + rejections.sorted { $0.key < $1.key }.map { "{\"rule\":\"\($0.key)\",\"count\":\($0.value)}" }.joined(separator: ",") + "]"
        out += ",\"delay_hours\":[" + zip(SummaryAggregates.delayBuckets, delays).map { bucket, n in
            "{\"from\":\(bucket.from),\"to\":\(bucket.to.map(String.init) ?? "null"),\"count\":\(n)}"
        }.joined(separator: ",") + "]"
        out += ",\"tokens\":{\"with_tokens\":\(withTokens.json()),\"verified\":\(verifiedTokens.json())}"
        func shown(_ site: String) -> Bool { (query.site == nil || site == query.site) && (query.readableSites?.contains(site) ?? true) }
        out += ",\"registered\":{\"conversions\":\(registry.conversions.filter { shown($0.site) }.count),"
        out += "\"campaigns\":\(registry.campaigns.filter { shown($0.sourceSite) || shown($0.destination) }.count)}}"
        return out
    }

    /// The crosstab's columns (conversions) and rows (campaigns), in the order the page shows them.
    var crosstabAxes: (campaigns: [CampaignRow], conversions: [ConversionRow]) {
        let campaigns = Set(crosstab.keys.map(\.campaign)).sorted { ($0.sourceSite, $0.sourceID, $0.campaign ?? "") < ($1.sourceSite, $1.sourceID, $1.campaign ?? "") }
        let conversions = Set(crosstab.keys.map(\.conversion)).sorted { ($0.destination, $0.triggerData) < ($1.destination, $1.triggerData) }
        return (campaigns, conversions)
    }

    static func conversionName(_ row: ConversionRow, _ registry: Registry) -> String? {
        registry.conversions(site: row.destination, triggerData: row.triggerData).first?.name
    }

    /// `{"copy":"destination","conversions":[{site, trigger_data, conversion}],
    ///   "rows":[{source_site, source_id, campaign, counts:[…], total}], "totals":[…], "total":n}`
    func crosstabJSON(registry: Registry) -> String {
        let (campaigns, conversions) = crosstabAxes
        var out = "{\"copy\":\"\(crosstabCopy.rawValue)\",\"conversions\":["
        out += conversions.map { c in
            var o = "{\"site\":"
            JSONValue.writeString(c.destination, to: &o)
            o += ",\"trigger_data\":\(c.triggerData),\"conversion\":"
            if let name = Self.conversionName(c, registry) { JSONValue.writeString(name, to: &o) } else { o += "null" }
            return o + "}"
        }.joined(separator: ",") + "],\"rows\":["
        var totals = Array(repeating: 0, count: conversions.count)
        out += campaigns.map { row in
            var o = "{\"source_site\":"
            JSONValue.writeString(row.sourceSite, to: &o)
            o += ",\"source_id\":\(row.sourceID),\"campaign\":"
            if let c = row.campaign { JSONValue.writeString(c, to: &o) } else { o += "null" }
            let counts = conversions.map { crosstab[CrosstabCell(campaign: row, conversion: $0)] ?? 0 }
            for (i, n) in counts.enumerated() { totals[i] += n }
            return o + ",\"counts\":[" + counts.map(String.init).joined(separator: ",") + "],\"total\":\(counts.reduce(0, +))}"
        }.joined(separator: ",")
        return out + "],\"totals\":[" + totals.map(String.init).joined(separator: ",") + "],\"total\":\(totals.reduce(0, +))}"
    }

    /// The crosstab as RFC 4180 CSV: a row per campaign, a column per conversion, and the totals.
    func crosstabCSV(registry: Registry) -> String {
        let (campaigns, conversions) = crosstabAxes
        let columns = conversions.map { c in "\(c.destination) \(c.triggerData)" + (Self.conversionName(c, registry).map { " \($0)" } ?? "") }
        var out = (["source_site", "source_id", "campaign"] + columns + ["total (\(crosstabCopy.rawValue) copies)"]).map(CSV.field).joined(separator: ",") + "\r\n"
        var totals = Array(repeating: 0, count: conversions.count)
        for row in campaigns {
            let counts = conversions.map { crosstab[CrosstabCell(campaign: row, conversion: $0)] ?? 0 }
            for (i, n) in counts.enumerated() { totals[i] += n }
            out += ([row.sourceSite, String(row.sourceID), row.campaign ?? ""] + counts.map(String.init) + [String(counts.reduce(0, +))])
                .map(CSV.field).joined(separator: ",") + "\r\n"
        }
        out += (["total", "", ""] + totals.map(String.init) + [String(totals.reduce(0, +))]).map(CSV.field).joined(separator: ",") + "\r\n"
        return out
    }

    /// RFC 4180 CSV of the summary table: one row per day and group (site, role, verdict,
    /// campaign, conversion, lateness), the finest grain the summary keeps.
    static func csv(_ aggregates: SummaryAggregates, _ query: SummaryQuery, registry: Registry) -> String {
        var out = "day,site,role,verdict,source_site,source_id,campaign,destination,trigger_data,conversion,late,reports\r\n"
        let name = aggregates.name
        for (d, day) in aggregates.days(in: query.from...query.to) {
            var rows: [[String]] = []
            for (g, n) in day.groups where (query.site == nil || query.site == name(g.site)) && (query.role == nil || query.role == g.role)
                && (query.readableSites?.contains(name(g.site)) ?? true) {
                let conversion = registry.conversions(site: name(g.destination), triggerData: g.triggerData).first?.name ?? ""
                rows.append([SummaryQuery.text(d), name(g.site), g.role.rawValue, g.accepted ? "accepted" : "quarantined", name(g.sourceSite),
                             String(g.sourceID),
                             NameDisclosure.campaign(sourceSite: name(g.sourceSite), onReportSentTo: name(g.site), to: query.readableSites) ? g.campaign.map(name) ?? "" : "",
                             name(g.destination), String(g.triggerData), conversion,
                             g.late ? "true" : "false", String(n)])
            }
            for row in rows.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                out += row.map(CSV.field).joined(separator: ",") + "\r\n"
            }
        }
        return out
    }
}
