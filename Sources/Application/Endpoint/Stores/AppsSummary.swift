import Foundation
import AppDevelopers
import ClickHouseExport
import Marketers
import Postbacks
import Primitives
import RecordLog
import SiteOwners

/// The Apps view: what app developers' postback copies say, per app site and period: the same
/// postbacks `/api/postbacks` lists, counted as they are stored (`AppsAggregates`, per day and
/// site) or read from the cluster's warehouse. Deliveries that came again are counted at the day
/// and site of the postback they repeat, whenever they arrive.
///
/// Conversions, values, windows, fidelity and privacy tiers count accepted postbacks only; the
/// data-quality numbers count every stored one (quarantine reasons, the quarantined ones). An install, redownload or re-engagement is a
/// winning postback of the first window (sequence index 0, or none before SKAdNetwork 4).
struct AppsSummary: Codable {
    struct Query {
        var site: String?
        var from: Int32
        var to: Int32
        /// The sites a viewer token may read; nil: every site.
        var readableSites: Set<String>? = nil

        /// Whether counts of `site` belong in the answer.
        func reads(_ site: String) -> Bool {
            (self.site.map { $0 == site } ?? true) && (readableSites?.contains(site) ?? true)
        }

        /// The same, as a ClickHouse condition on `site` (empty: every site).
        var sqlSiteCondition: String {
            var out = site.map { " AND site = " + ClickHouseClient.quoted($0) } ?? ""
            if let readableSites { out += " AND site IN (" + (readableSites.isEmpty ? "''" : readableSites.sorted().map(ClickHouseClient.quoted).joined(separator: ", ")) + ")" }
            return out
        }
    }

    struct ConversionKey: Hashable, Codable {
        var adNetwork: String
        var campaign: String
        var appID: String
        /// The postbacks' conversion value (`ValueCode`); nil (digests before apps-4) as 0, none.
        var value: Int? = nil
        /// Which version of the app's schema the value reads with (`SchemaReading.code`); nil
        /// (digests before apps-6, and postbacks without a value) as 0, before any version.
        var schema: Int? = nil
        /// True for postbacks no key could check (SKAdNetwork 1.0 and 2.0): anyone could have sent
        /// them, so no amount of money is estimated from them; nil (false) otherwise.
        var unverifiable: Bool? = nil

        var valueCode: Int { value ?? 0 }
        var schemaCode: Int { schema ?? 0 }
    }

    /// Which version of an app's schema a value set within a window was set under.
    typealias SchemaReader = @Sendable (_ appID: Int, _ window: ValueSetWindow) -> SchemaReading

    /// A conversion value as one small number: 0 none, 1–64 the fine values 0–63, 65–67 the
    /// coarse low, medium and high. What the campaign × value table is kept by.
    enum ValueCode {
        static let coarseWords = ["low", "medium", "high"]

        static func of(fine: Int?, coarse: String?) -> Int {
            if let fine, (0...63).contains(fine) { return fine + 1 }
            if let coarse, let i = coarseWords.firstIndex(of: coarse) { return 65 + i }
            return 0
        }

        /// ("fine", "12"), ("coarse", "low") or ("none", "").
        static func describe(_ code: Int) -> (tier: String, value: String) {
            switch code {
            case 1...64: ("fine", String(code - 1))
            case 65...67: ("coarse", coarseWords[code - 65])
            default: ("none", "")
            }
        }
    }

    /// Winning first-window postbacks by what they were, and accepted postbacks of every window.
    struct ConversionCounts: Codable {
        var installs = 0
        var redownloads = 0
        var reEngagements = 0
        /// Accepted postbacks of any window (a campaign × value cell); none in digests before apps-4.
        var postbacks = 0

        init(installs: Int = 0, redownloads: Int = 0, reEngagements: Int = 0, postbacks: Int = 0) {
            self.installs = installs
            self.redownloads = redownloads
            self.reEngagements = reEngagements
            self.postbacks = postbacks
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            installs = try c.decode(Int.self, forKey: .installs)
            redownloads = try c.decode(Int.self, forKey: .redownloads)
            reEngagements = try c.decode(Int.self, forKey: .reEngagements)
            postbacks = try c.decodeIfPresent(Int.self, forKey: .postbacks) ?? 0
        }

        mutating func add(_ other: ConversionCounts) {
            installs +|= other.installs
            redownloads +|= other.redownloads
            reEngagements +|= other.reEngagements
            postbacks +|= other.postbacks
        }
    }

    private var stored = 0, accepted = 0, duplicates = 0, development = 0
    private var sites: Set<String> = []
    private(set) var conversions: [ConversionKey: ConversionCounts] = [:]
    private var fine: [Int: Int] = [:]
    private var coarse: [String: Int] = [:]
    private var windows: [Int: Int] = [:]
    private var fidelity: [String: Int] = [:]
    private var digits: [Int: Int] = [:]
    private var valueTiers: [String: Int] = [:]
    private var signatures: [String: Int] = [:]
    /// Postbacks no key could check (SKAdNetwork 1.0 and 2.0's P-192 signatures), by ad network:
    /// kept and counted, and shown apart, Apple Ads' among them. Nil in digests before apps-5.
    private var unverifiable: [String: Int]? = nil
    /// Ad networks named in `unverifiable` at most; past them, `otherNetworks`.
    static let unverifiableNetworks = 64
    static let otherNetworks = "(other ad networks)"

    /// Postbacks of `adNetwork` no key could check.
    func unverifiableCount(adNetwork: String) -> Int { unverifiable?[adNetwork] ?? 0 }
    private var reasons: [String: Int] = [:]
    /// Accepted postbacks and installs by `country-code` (`CountryCode.key`: the code, "not sent"
    /// or "unreadable"); nil in digests before apps-6.
    private var countries: [String: ConversionCounts]? = nil
    /// Installs, redownloads and re-engagements per day of the query; only in an answer.
    var perDay: [Int32: ConversionCounts]? = nil
    /// Estimated revenue per day and currency; only in an answer, and only when asked with the
    /// registry (`addRevenue`).
    var perDayRevenue: [Int32: [String: RevenueEstimate]]? = nil

    /// The revenue range a conversion's value stands for in the version of its app's schema it
    /// reads with: none for a coarse value, no value, an ambiguous version or a range without one.
    static func revenueRange(_ key: ConversionKey, _ registry: AppRegistry) -> (currency: String, range: ConversionValueSchema.Revenue)? {
        guard key.unverifiable != true, (1...64).contains(key.valueCode), let revenue = Reading(key, registry).schema?.revenue(fine: key.valueCode - 1) else { return nil }
        return (revenue.currency, revenue)
    }

    /// Adds the estimated revenue of `postbacks` alike in `key` to `day`.
    mutating func addRevenue(day: Int32, key: ConversionKey, postbacks: Int, registry: AppRegistry) {
        guard postbacks > 0, let (currency, range) = Self.revenueRange(key, registry) else { return }
        var days = perDayRevenue ?? [:]
        days[day, default: [:]][currency, default: RevenueEstimate()].add(range, postbacks: postbacks)
        perDayRevenue = days
    }

    /// The counts of postbacks read elsewhere (the cluster's, from ClickHouse).
    init(sites: Set<String>) {
        self.sites = sites
    }

    /// What the view reads of a stored postback: its verdict and signature, and its fields as text.
    struct Facts {
        var skadnetwork: Bool
        var accepted: Bool
        var reasons: [String]
        var signature: String
        var development: Bool
        /// A field's value as text (booleans "true" and "false"); nil when absent.
        var text: (String) -> String?

        /// The app it is for (`app-id`, `advertised-item-identifier`) as at most 20 digits; nil otherwise.
        var appID: String? {
            guard let digits = text(skadnetwork ? "app-id" : "advertised-item-identifier"), !digits.isEmpty, digits.utf8.count <= 20,
                  digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return digits
        }

        init(skadnetwork: Bool, accepted: Bool, reasons: [String], signature: String, development: Bool, text: @escaping (String) -> String?) {
            self.skadnetwork = skadnetwork
            self.accepted = accepted
            self.reasons = reasons
            self.signature = signature
            self.development = development
            self.text = text
        }

        /// The postback's app and when its value could have been set; nil for a postback without
        /// a value or an app, which no schema reads.
        func valueSet(receivedAt: Timestamp) -> (appID: Int, window: ValueSetWindow)? {
            guard let app = appID.flatMap({ Int($0) }),
                  text("conversion-value") != nil || text("coarse-conversion-value") != nil else { return nil }
            let index = text("postback-sequence-index").flatMap { Int($0) }
            return (app, ValueSetWindow(arrival: receivedAt, sequenceIndex: index))
        }

        /// Which version of its app's schema the postback's value was set under, as a code; 0 for
        /// a postback without a value or an app.
        func schemaReading(receivedAt: Timestamp, _ reader: SchemaReader) -> Int {
            valueSet(receivedAt: receivedAt).map { reader($0.appID, $0.window).code } ?? 0
        }

        init(_ postback: StoredPostback) {
            let d = postback.draft
            let f = PostbackFields(postback)
            self.init(skadnetwork: postback.protocol == .skadnetwork, accepted: d.verdict == .accepted, reasons: d.reasons,
                      signature: d.signature.name, development: d.signature == .appleDevelopment) { key in
                switch f.value(key) {
                case .string(let s)?: s
                case .number(let n)?: n
                case .bool(let b)?: b ? "true" : "false"
                default: nil
                }
            }
        }
    }

    /// Deliveries that came again, counted apart from the postbacks they repeat.
    mutating func addDuplicates(_ n: Int) {
        duplicates += n
    }

    /// Adds conversions counted elsewhere (`AppsAggregates` keeps them apart, as numbers).
    mutating func addConversions(_ key: ConversionKey, _ counts: ConversionCounts) {
        conversions[key, default: ConversionCounts()].add(counts)
    }

    /// Takes the conversions out, for `AppsAggregates` to keep apart.
    mutating func removeConversions() -> [ConversionKey: ConversionCounts] {
        defer { conversions = [:] }
        return conversions
    }

    /// Adds another period's or site's counts; saturating, as a crafted digest's counts must not
    /// trap a start.
    mutating func merge(_ other: AppsSummary) {
        stored +|= other.stored
        accepted +|= other.accepted
        duplicates +|= other.duplicates
        development +|= other.development
        sites.formUnion(other.sites)
        for (key, counts) in other.conversions { conversions[key, default: ConversionCounts()].add(counts) }
        for (k, n) in other.fine { fine[k, default: 0] +|= n }
        for (k, n) in other.coarse { coarse[k, default: 0] +|= n }
        for (k, n) in other.windows { windows[k, default: 0] +|= n }
        for (k, n) in other.fidelity { fidelity[k, default: 0] +|= n }
        for (k, n) in other.digits { digits[k, default: 0] +|= n }
        for (k, n) in other.valueTiers { valueTiers[k, default: 0] +|= n }
        for (k, n) in other.signatures { signatures[k, default: 0] +|= n }
        if let theirs = other.unverifiable {
            var counts = unverifiable ?? [:]
            for (network, n) in theirs {
                let named = counts.keys.count - (counts[Self.otherNetworks] == nil ? 0 : 1)
                let key = network != Self.otherNetworks && counts[network] == nil && named >= Self.unverifiableNetworks ? Self.otherNetworks : network
                counts[key, default: 0] +|= n
            }
            unverifiable = counts
        }
        for (k, n) in other.reasons { reasons[k, default: 0] +|= n }
        if let theirs = other.countries {
            var mine = countries ?? [:]
            for (k, n) in theirs { mine[k, default: ConversionCounts()].add(n) }
            countries = mine
        }
        if let days = other.perDay { for (d, counts) in days { addPerDay(d, counts) } }
        if let days = other.perDayRevenue {
            var mine = perDayRevenue ?? [:]
            for (d, byCurrency) in days { for (c, e) in byCurrency { mine[d, default: [:]][c, default: RevenueEstimate()].add(e) } }
            perDayRevenue = mine
        }
    }

    mutating func addPerDay(_ day: Int32, _ counts: ConversionCounts) {
        var days = perDay ?? [:]
        days[day, default: ConversionCounts()].add(counts)
        perDay = days
    }

    /// Adds `count` postbacks alike in every fact, and `retries` deliveries of them that came
    /// again; `schema`: which version of the app's schema their value reads with (`SchemaReading.code`).
    /// Returns the conversion they were counted under, if accepted.
    @discardableResult
    mutating func add(_ facts: Facts, retries: Int, count: Int = 1, schema: Int = 0) -> ConversionKey? {
        stored += count
        duplicates += retries
        signatures[facts.signature, default: 0] += count
        if facts.signature == SignatureOutcome.unverifiable.name {
            // Anyone can send such a postback under any name: a handful of networks are kept by
            // name, the rest together.
            var network = facts.text(facts.skadnetwork ? "ad-network-id" : "ad-network-identifier") ?? ""
            var counts = unverifiable ?? [:]
            let named = counts.keys.count - (counts[Self.otherNetworks] == nil ? 0 : 1)
            if counts[network] == nil && named >= Self.unverifiableNetworks { network = Self.otherNetworks }
            counts[network, default: 0] +|= count
            unverifiable = counts
        }
        if facts.development { development += count }
        guard facts.accepted else {
            for reason in facts.reasons { reasons[reason, default: 0] += count }
            return nil
        }
        accepted += count
        let text = facts.text
        let index = Int(text("postback-sequence-index") ?? "0") ?? 0
        windows[index, default: 0] += count
        let sourceIdentifier = text("source-identifier")
        if let sourceIdentifier { digits[sourceIdentifier.utf8.count, default: 0] += count }
        let fineValue = text("conversion-value").flatMap { Int($0) }
        let coarseValue = fineValue == nil ? text("coarse-conversion-value") : nil
        if let value = fineValue {
            fine[value, default: 0] += count
            valueTiers["fine", default: 0] += count
        } else if let value = coarseValue {
            coarse[value, default: 0] += count
            valueTiers["coarse", default: 0] += count
        } else {
            valueTiers["none", default: 0] += count
        }
        if facts.skadnetwork {
            if let type = text("fidelity-type") { fidelity[type == "1" ? "storekit_or_web" : "view", default: 0] += count }
        } else if let type = text("ad-interaction-type") {
            fidelity[type, default: 0] += count
        }
        var counts = Self.conversionKind(facts, count: count) ?? ConversionCounts()
        counts.postbacks = count
        var byCountry = countries ?? [:]
        byCountry[CountryCode.key(text("country-code")), default: ConversionCounts()].add(counts)
        countries = byCountry
        let key = ConversionKey(adNetwork: text(facts.skadnetwork ? "ad-network-id" : "ad-network-identifier") ?? "",
                                campaign: sourceIdentifier ?? text("campaign-id") ?? "",
                                appID: text(facts.skadnetwork ? "app-id" : "advertised-item-identifier") ?? "",
                                value: ValueCode.of(fine: fineValue, coarse: coarseValue), schema: schema == 0 ? nil : schema,
                                unverifiable: facts.signature == SignatureOutcome.unverifiable.name ? true : nil)
        conversions[key, default: ConversionCounts()].add(counts)
        return key
    }

    /// What an accepted postback counts as: an install, redownload or re-engagement if it is a
    /// winning postback of the first window (sequence index 0, or none before SKAdNetwork 4).
    static func conversionKind(_ facts: Facts, count: Int) -> ConversionCounts? {
        let text = facts.text
        guard facts.accepted, (Int(text("postback-sequence-index") ?? "0") ?? 0) == 0, text("did-win") != "false" else { return nil }
        var kind = ConversionCounts()
        if facts.skadnetwork {
            if text("redownload") == "true" { kind.redownloads = count } else { kind.installs = count }
        } else {
            switch text("conversion-type") {
            case "redownload": kind.redownloads = count
            case "re-engagement", "reengagement": kind.reEngagements = count
            default: kind.installs = count
            }
        }
        return kind
    }

    /// `spend`: the spend rows of the period the reader may read, for `spend_and_return`.
    func json(_ registry: AppRegistry, query: Query, spend: [SpendRow] = []) -> String {
        var out: [(String, JSONValue)] = [
            ("period", .object([JSONMember(key: "from", value: .string(Self.date(query.from))),
                                JSONMember(key: "to", value: .string(Self.date(query.to)))])),
            // As every other view names its period.
            ("from", .string(Self.date(query.from))),
            ("to", .string(Self.date(query.to))),
            ("site", query.site.map { .string($0) } ?? .null),
            ("sites", .array(sites.sorted().map { .string($0) })),
            ("postbacks", Self.object(["stored": stored, "accepted": accepted, "quarantined": stored &- accepted,
                                       "duplicates_received": duplicates, "development": development])),
        ]
        // The conversions by campaign, whatever their value.
        var byCampaign: [ConversionKey: ConversionCounts] = [:]
        for (key, counts) in conversions {
            var campaign = key
            campaign.value = nil
            campaign.schema = nil
            campaign.unverifiable = nil
            byCampaign[campaign, default: ConversionCounts()].add(counts)
        }
        let rows: [JSONValue] = byCampaign.filter { $0.value.installs + $0.value.redownloads + $0.value.reEngagements > 0 }
            .sorted { ($0.key.adNetwork, $0.key.campaign, $0.key.appID) < ($1.key.adNetwork, $1.key.campaign, $1.key.appID) }.map { key, counts in
            .object(Self.campaignMembers(key, registry) + [
                JSONMember(key: "installs", value: .number(String(counts.installs))),
                JSONMember(key: "redownloads", value: .number(String(counts.redownloads))),
                JSONMember(key: "re_engagements", value: .number(String(counts.reEngagements))),
            ])
        }
        out.append(("conversions", .array(rows)))
        out.append(("revenue", revenueJSON(registry, query: query)))
        out.append(("spend_and_return", SpendReturn(spend: spend, summary: self, registry: registry).json(registry)))
        out.append(("crosstab", crosstab(registry)))
        if let perDay {
            out.append(("per_day", .array((query.from...query.to).map { day in
                let counts = perDay[day] ?? ConversionCounts()
                return .object([JSONMember(key: "day", value: .string(Self.date(day))),
                                JSONMember(key: "installs", value: .number(String(counts.installs))),
                                JSONMember(key: "redownloads", value: .number(String(counts.redownloads))),
                                JSONMember(key: "re_engagements", value: .number(String(counts.reEngagements)))])
            })))
        }
        // A value is read through the schema versions its postbacks were set under (the rows by
        // value say which; days digested before they were kept, through every app shown): its
        // meaning is the one they all give it. Where they differ, or an app has none, it is its
        // number. Postbacks whose version is ambiguous give it none: they are counted apart.
        var readingsByValue: [Int: Set<Reading>] = [:]
        var ambiguousPostbacks = 0
        var versionsUsed: [Reading: Int] = [:]
        for (key, counts) in conversions where key.valueCode != 0 {
            let reading = Reading(key, registry)
            if reading.reading.isAmbiguous { ambiguousPostbacks +|= counts.postbacks; continue }
            readingsByValue[key.valueCode, default: []].insert(reading)
            if reading.version != nil { versionsUsed[reading, default: 0] +|= counts.postbacks }
        }
        let shown = registry.apps.filter { query.reads($0.site) }.map { Reading(appID: String($0.appID), reading: .beforeAnyVersion, registry) }
        func common(_ code: Int, _ meaning: (ConversionValueSchema) -> String?) -> String? {
            let readings = readingsByValue[code] ?? Set(shown)
            let meanings = Set(readings.map { $0.schema.flatMap(meaning) })
            return meanings.count == 1 ? meanings.first ?? nil : nil
        }
        out.append(("fine_values", .array(fine.sorted { $0.key < $1.key }.map { value, count in
            .object([JSONMember(key: "value", value: .number(String(value))),
                     JSONMember(key: "meaning", value: common(ValueCode.of(fine: value, coarse: nil)) { $0.meaning(fine: value) }.map { .string($0) } ?? .null),
                     JSONMember(key: "count", value: .number(String(count)))])
        })))
        out.append(("coarse_values", .array(["low", "medium", "high"].compactMap { value in
            coarse[value].map { count in
                .object([JSONMember(key: "value", value: .string(value)),
                         JSONMember(key: "meaning", value: common(ValueCode.of(fine: nil, coarse: value)) { $0.meaning(coarse: value) }.map { .string($0) } ?? .null),
                         JSONMember(key: "count", value: .number(String(count)))])
            }
        })))
        // Which versions of each app's schema read the values shown, and how many postbacks
        // could have been set under more than one.
        out.append(("schema_versions", .object([
            JSONMember(key: "ambiguous_postbacks", value: .number(String(ambiguousPostbacks))),
            JSONMember(key: "used", value: .array(versionsUsed.sorted { ($0.key.appID, $0.key.version ?? 0) < ($1.key.appID, $1.key.version ?? 0) }.map { reading, count in
                .object([JSONMember(key: "app_id", value: .string(reading.appID)),
                         JSONMember(key: "version", value: .number(String(reading.version ?? 0))),
                         JSONMember(key: "effective_from", value: reading.effectiveFrom.map { .string($0.rfc3339) } ?? .null),
                         JSONMember(key: "postbacks", value: .number(String(count)))])
            })),
        ])))
        out.append(("postback_windows", .array(windows.sorted { $0.key < $1.key }.map {
            .object([JSONMember(key: "index", value: .number(String($0.key))), JSONMember(key: "count", value: .number(String($0.value)))])
        })))
        out.append(("fidelity", Self.object(fidelity)))
        out.append(("privacy_tiers", .object([
            JSONMember(key: "source_identifier_digits", value: Self.object(Dictionary(uniqueKeysWithValues: digits.map { (String($0.key), $0.value) }))),
            JSONMember(key: "conversion_value", value: Self.object(valueTiers)),
        ])))
        out.append(("signatures", Self.object(signatures)))
        out.append(("unverifiable_by_ad_network", .array((unverifiable ?? [:]).sorted { $0.key < $1.key }.map { network, count in
            .object([JSONMember(key: "ad_network", value: .string(network)),
                     JSONMember(key: "ad_network_name", value: registry.adNetwork(id: network).map { .string($0.name) } ?? .null),
                     JSONMember(key: "postbacks", value: .number(String(count)))])
        })))
        out.append(("quarantine_reasons", Self.object(reasons)))
        // By country: accepted postbacks and their installs; "not sent" below the tier that
        // carries a country, never guessed.
        out.append(("countries", .array((countries ?? [:]).sorted { ($1.value.postbacks, $0.key) < ($0.value.postbacks, $1.key) }.map { country, counts in
            .object([JSONMember(key: "country", value: .string(country)),
                     JSONMember(key: "postbacks", value: .number(String(counts.postbacks))),
                     JSONMember(key: "installs", value: .number(String(counts.installs &+ counts.redownloads))),
                     JSONMember(key: "re_engagements", value: .number(String(counts.reEngagements)))])
        })))
        return JSONValue.object(out.map { JSONMember(key: $0.0, value: $0.1) }).serialized()
    }

    /// A campaign's ids and registered names, as every table of campaigns writes them.
    static func campaignMembers(_ key: ConversionKey, _ registry: AppRegistry) -> [JSONMember] {
        let network = registry.adNetwork(id: key.adNetwork)
        return [
            JSONMember(key: "ad_network", value: .string(key.adNetwork)),
            JSONMember(key: "ad_network_name", value: network.map { .string($0.name) } ?? .null),
            JSONMember(key: "campaign", value: .string(key.campaign)),
            JSONMember(key: "campaign_name", value: network?.campaign(named: key.campaign).map { .string($0) } ?? .null),
            JSONMember(key: "app_id", value: .string(key.appID)),
            JSONMember(key: "app_name", value: Int(key.appID).flatMap { registry.app(id: $0) }.map { .string($0.name) } ?? .null),
        ]
    }

    /// What the estimates are, in every answer and file that shows one.
    static let revenueLabel = "estimated from the revenue ranges the app's schema gives its conversion values: not a measured amount"

    /// Estimated revenue per campaign (and app) and currency, over the period.
    func revenueByCampaign(_ registry: AppRegistry) -> [ConversionKey: [String: RevenueEstimate]] {
        var out: [ConversionKey: [String: RevenueEstimate]] = [:]
        for (key, counts) in conversions where counts.postbacks > 0 {
            guard let (currency, range) = Self.revenueRange(key, registry) else { continue }
            var campaign = key
            campaign.value = nil
            campaign.schema = nil
            campaign.unverifiable = nil
            out[campaign, default: [:]][currency, default: RevenueEstimate()].add(range, postbacks: counts.postbacks)
        }
        return out
    }

    /// An amount as the answers write it: to the cent.
    static func amount(_ value: Double) -> JSONValue {
        .number(value.isFinite ? String(format: "%.2f", value) : "0")
    }

    static func estimateMembers(_ e: RevenueEstimate) -> [JSONMember] {
        [JSONMember(key: "postbacks", value: .number(String(e.postbacks))), JSONMember(key: "low", value: amount(e.low)),
         JSONMember(key: "middle", value: amount(e.middle)), JSONMember(key: "high", value: amount(e.high))]
    }

    /// `revenue`: per campaign and per day, each a low, middle and high estimate per currency,
    /// and how many postbacks with a fine value have none (an ambiguous version, a range without
    /// revenue, or a signature no key could check).
    func revenueJSON(_ registry: AppRegistry, query: Query) -> JSONValue {
        let byCampaign = revenueByCampaign(registry)
        var totals: [String: RevenueEstimate] = [:]
        for (_, byCurrency) in byCampaign { for (c, e) in byCurrency { totals[c, default: RevenueEstimate()].add(e) } }
        var withoutEstimate = 0
        for (key, counts) in conversions where (1...64).contains(key.valueCode) && Self.revenueRange(key, registry) == nil {
            withoutEstimate +|= counts.postbacks
        }
        let campaigns: [JSONValue] = byCampaign.flatMap { key, byCurrency in byCurrency.map { (key, $0.key, $0.value) } }
            .sorted { ($1.2.middle, $0.0.adNetwork, $0.0.campaign, $0.0.appID, $0.1) < ($0.2.middle, $1.0.adNetwork, $1.0.campaign, $1.0.appID, $1.1) }
            .map { key, currency, estimate in
                .object(Self.campaignMembers(key, registry) + [
                    JSONMember(key: "currency", value: .string(currency)),
                ] + Self.estimateMembers(estimate))
            }
        var perDay: [JSONValue] = []
        if let days = perDayRevenue {
            for day in query.from...query.to {
                for (currency, estimate) in (days[day] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    perDay.append(.object([JSONMember(key: "day", value: .string(Self.date(day))),
                                           JSONMember(key: "currency", value: .string(currency))] + Self.estimateMembers(estimate)))
                }
            }
        }
        return .object([
            JSONMember(key: "estimate", value: .string(Self.revenueLabel)),
            JSONMember(key: "totals", value: .array(totals.sorted { $0.key < $1.key }.map {
                .object([JSONMember(key: "currency", value: .string($0.key))] + Self.estimateMembers($0.value))
            })),
            JSONMember(key: "by_campaign", value: .array(campaigns)),
            JSONMember(key: "per_day", value: .array(perDay)),
            JSONMember(key: "postbacks_without_estimate", value: .number(String(withoutEstimate))),
        ])
    }

    /// Campaign × what the value means: accepted postbacks (every window) by ad network, campaign
    /// and app, against the meaning the app's schema gives their value (fine, then coarse), or
    /// the value itself where the schema names none. Postbacks without a value (below Apple's
    /// privacy threshold) have a column of their own.
    struct Crosstab {
        struct Column: Hashable { var tier: String; var meaning: String }
        struct Row {
            var adNetwork: String
            var adNetworkName: String?
            var campaign: String
            var campaignName: String?
            var appID: String
            var appName: String?
            /// The version of the app's schema its values read with; nil when none or ambiguous.
            var schemaVersion: Int?
            /// The versions its values could have been set under, when more than one ("1-2").
            var ambiguousVersions: String
            var counts: [Int]
            /// Estimated revenue by currency (`revenueLabel`).
            var revenue: [String: RevenueEstimate] = [:]
        }
        /// Every currency a row has an estimate in: a low, middle and high column each in the CSV.
        var currencies: [String] { Array(Set(rows.flatMap { $0.revenue.keys })).sorted() }
        var columns: [Column] = []
        var rows: [Row] = []
        var totals: [Int] { columns.indices.map { i in rows.reduce(0) { $0 + $1.counts[i] } } }
    }

    func crosstabTable(_ registry: AppRegistry) -> Crosstab {
        typealias Column = Crosstab.Column
        struct RowKey: Hashable { var campaign: ConversionKey; var reading: SchemaReading }
        var cells: [RowKey: [Column: Int]] = [:]
        var revenue: [RowKey: [String: RevenueEstimate]] = [:]
        // A column stands where its lowest value would: meanings in the order of their ranges,
        // low before medium before high; values of an ambiguous version after them all.
        var rank: [Column: Int] = [:]
        for (key, counts) in conversions where counts.postbacks > 0 {
            let (tier, value) = ValueCode.describe(key.valueCode)
            let reading = Reading(key, registry)
            let schema = reading.schema
            let column: Column
            switch tier {
            case _ where reading.reading.isAmbiguous && tier != "none": column = Column(tier: "ambiguous", meaning: "\(tier) \(value)")
            case "fine": column = Column(tier: tier, meaning: Int(value).flatMap { schema?.meaning(fine: $0) } ?? value)
            case "coarse": column = Column(tier: tier, meaning: schema?.meaning(coarse: value) ?? value)
            default: column = Column(tier: tier, meaning: "no value")
            }
            var row = key
            row.value = nil
            row.schema = nil
            row.unverifiable = nil
            let rowKey = RowKey(campaign: row, reading: key.valueCode == 0 ? .beforeAnyVersion : reading.reading)
            cells[rowKey, default: [:]][column, default: 0] += counts.postbacks
            if let (currency, range) = Self.revenueRange(key, registry) {
                revenue[rowKey, default: [:]][currency, default: RevenueEstimate()].add(range, postbacks: counts.postbacks)
            }
            let base = key.valueCode == 0 ? Int.max : key.valueCode
            rank[column] = min(rank[column] ?? .max, column.tier == "ambiguous" ? 1000 + key.valueCode : base)
        }
        var table = Crosstab()
        table.columns = rank.keys.sorted { (rank[$0] ?? 0, $0.meaning) < (rank[$1] ?? 0, $1.meaning) }
        table.rows = cells.sorted {
            ($0.key.campaign.adNetwork, $0.key.campaign.campaign, $0.key.campaign.appID, $0.key.reading.code)
                < ($1.key.campaign.adNetwork, $1.key.campaign.campaign, $1.key.campaign.appID, $1.key.reading.code)
        }.map { rowKey, byColumn in
            let key = rowKey.campaign
            let network = registry.adNetwork(id: key.adNetwork)
            let versions = rowKey.reading.versions
            return Crosstab.Row(adNetwork: key.adNetwork, adNetworkName: network?.name, campaign: key.campaign,
                                campaignName: network?.campaign(named: key.campaign), appID: key.appID,
                                appName: Int(key.appID).flatMap { registry.app(id: $0) }?.name,
                                schemaVersion: versions.flatMap { $0.count == 1 ? $0.lowerBound : nil },
                                ambiguousVersions: versions.map { $0.count > 1 ? "\($0.lowerBound)-\($0.upperBound)" : "" } ?? "",
                                counts: table.columns.map { byColumn[$0] ?? 0 }, revenue: revenue[rowKey] ?? [:])
        }
        return table
    }

    /// A conversion key's app and the version of its schema it reads with, resolved: version 1
    /// for postbacks stored before there was one.
    struct Reading: Hashable {
        var appID: String
        var reading: SchemaReading
        var version: Int?
        var effectiveFrom: Timestamp?
        var schema: ConversionValueSchema?

        static func == (a: Reading, b: Reading) -> Bool { a.appID == b.appID && a.reading == b.reading }
        func hash(into hasher: inout Hasher) {
            hasher.combine(appID)
            hasher.combine(reading)
        }

        init(_ key: ConversionKey, _ registry: AppRegistry) {
            self.init(appID: key.appID, reading: SchemaReading(code: key.schemaCode), registry)
        }

        init(appID: String, reading: SchemaReading, _ registry: AppRegistry) {
            self.appID = appID
            let history = Int(appID).flatMap { registry.history(appID: $0) }
            self.reading = history?.resolve(reading) ?? reading
            if case .version(let n) = self.reading, let found = history?.version(n) {
                version = n
                effectiveFrom = found.effectiveFrom
                schema = found.schema
            }
        }
    }

    func crosstab(_ registry: AppRegistry) -> JSONValue {
        let table = crosstabTable(registry)
        let totals = table.totals
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        return .object([
            JSONMember(key: "counts", value: .string("postbacks")),
            JSONMember(key: "columns", value: .array(table.columns.map {
                .object([JSONMember(key: "tier", value: .string($0.tier)), JSONMember(key: "meaning", value: .string($0.meaning))])
            })),
            JSONMember(key: "rows", value: .array(table.rows.map { row in
                .object([
                    JSONMember(key: "ad_network", value: .string(row.adNetwork)),
                    JSONMember(key: "ad_network_name", value: text(row.adNetworkName)),
                    JSONMember(key: "campaign", value: .string(row.campaign)),
                    JSONMember(key: "campaign_name", value: text(row.campaignName)),
                    JSONMember(key: "app_id", value: .string(row.appID)),
                    JSONMember(key: "app_name", value: text(row.appName)),
                    JSONMember(key: "schema_version", value: row.schemaVersion.map { .number(String($0)) } ?? .null),
                    JSONMember(key: "schema_ambiguous_versions", value: .string(row.ambiguousVersions)),
                    JSONMember(key: "counts", value: .array(row.counts.map { .number(String($0)) })),
                    JSONMember(key: "total", value: .number(String(row.counts.reduce(0, +)))),
                    JSONMember(key: "revenue", value: .array(row.revenue.sorted { $0.key < $1.key }.map {
                        .object([JSONMember(key: "currency", value: .string($0.key))] + Self.estimateMembers($0.value))
                    })),
                ])
            })),
            JSONMember(key: "revenue_estimate", value: .string(Self.revenueLabel)),
            JSONMember(key: "totals", value: .array(totals.map { .number(String($0)) })),
            JSONMember(key: "total", value: .number(String(totals.reduce(0, +)))),
        ])
    }

    /// The same table as RFC 4180 CSV: a row per campaign, a column per meaning, and the totals.
    func crosstabCSV(_ registry: AppRegistry) -> String {
        let table = crosstabTable(registry)
        let currencies = table.currencies
        let header = ["ad_network", "ad_network_name", "campaign", "campaign_name", "app_id", "app_name", "schema_version", "schema_ambiguous_versions"]
            + table.columns.map { "\($0.tier): \($0.meaning)" } + ["total postbacks"]
            + currencies.flatMap { c in ["low", "middle", "high"].map { "estimated revenue \($0) (\(c))" } }
        var out = header.map(CSV.field).joined(separator: ",") + "\r\n"
        func amounts(_ estimate: RevenueEstimate?) -> [String] {
            guard let estimate else { return ["", "", ""] }
            return [estimate.low, estimate.middle, estimate.high].map { String(format: "%.2f", $0) }
        }
        for row in table.rows {
            let cells = [row.adNetwork, row.adNetworkName ?? "", row.campaign, row.campaignName ?? "", row.appID, row.appName ?? "",
                         row.schemaVersion.map(String.init) ?? "", row.ambiguousVersions]
                + row.counts.map(String.init) + [String(row.counts.reduce(0, +))] + currencies.flatMap { amounts(row.revenue[$0]) }
            out += cells.map(CSV.field).joined(separator: ",") + "\r\n"
        }
        let totals = table.totals
        let revenueTotals = currencies.flatMap { c in
            amounts(table.rows.reduce(into: RevenueEstimate()) { sum, row in row.revenue[c].map { sum.add($0) } })
        }
        out += (["total", "", "", "", "", "", "", ""] + totals.map(String.init) + [String(totals.reduce(0, +))] + revenueTotals)
            .map(CSV.field).joined(separator: ",") + "\r\n"
        return out
    }

    private static func object(_ counts: [String: Int]) -> JSONValue {
        .object(counts.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: .number(String($0.value))) })
    }

    static func date(_ day: Int32) -> String {
        String(Timestamp(millisecondsSinceEpoch: Int64(day) * TimingModel.day).rfc3339.prefix(10))
    }
}
