import Primitives

/// The app developers' registrations: apps with their conversion-value schemas, and ad networks
/// with their campaigns. A value type with every rule and no I/O, like the site owners' registry.
public struct AppRegistry: Sendable, Equatable, Codable {
    public private(set) var apps: [App] = []
    public private(set) var adNetworks: [AdNetwork] = []
    public private(set) var appleAdsCampaigns: [AppleAdsCampaign] = []
    /// Every registered app's schema versions, and those of apps since removed, whose postbacks
    /// are still read with them.
    public private(set) var schemaHistories: [SchemaHistory] = []

    public init() {}

    enum CodingKeys: String, CodingKey {
        case apps, adNetworks = "ad_networks", appleAdsCampaigns = "apple_ads_campaigns", schemaHistories = "schema_histories"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        apps = try container.decodeIfPresent([App].self, forKey: .apps) ?? []
        adNetworks = try container.decodeIfPresent([AdNetwork].self, forKey: .adNetworks) ?? []
        appleAdsCampaigns = try container.decodeIfPresent([AppleAdsCampaign].self, forKey: .appleAdsCampaigns) ?? []
        schemaHistories = try container.decodeIfPresent([SchemaHistory].self, forKey: .schemaHistories) ?? []
        // A registry written before schemas had versions: each app's schema is its version 1,
        // which also reads every postback before it, as that registry read them.
        for app in apps where history(appID: app.appID) == nil {
            schemaHistories.append(SchemaHistory(appID: app.appID, site: app.site, schema: app.schema))
        }
    }

    /// A view of the registry for a reader who may see only `appIDs`' schemas: the others'
    /// versions left out of the copy (the registry itself never loses one).
    public func keepingSchemaHistories(of appIDs: Set<Int>) -> AppRegistry {
        var copy = self
        copy.schemaHistories.removeAll { !appIDs.contains($0.appID) }
        return copy
    }

    /// The versions of an app's schema, registered now or before.
    public func history(appID: Int) -> SchemaHistory? {
        schemaHistories.first { $0.appID == appID }
    }

    /// Which version of its app's schema a postback's value is read with: `appID` the postback's
    /// app, `window` when its value could have been set.
    public func schemaReading(appID: Int, window: ValueSetWindow) -> SchemaReading {
        history(appID: appID)?.reading(window) ?? .beforeAnyVersion
    }

    /// The schema a reading stands for when it names one version; nil when it names none (no
    /// version, or several).
    public func schema(appID: Int, reading: SchemaReading) -> (version: Int, schema: ConversionValueSchema)? {
        guard let history = history(appID: appID), case .version(let n) = history.resolve(reading),
              let version = history.version(n) else { return nil }
        return (n, version.schema)
    }

    /// Records the app's schema as its current version, from `now` if it changed. An app whose
    /// versions were made at another site is refused: they, and the postbacks read with them, are
    /// that site's owner's, and would show to the new site's.
    private mutating func recordSchema(of app: App, at now: Timestamp) throws(RequestProblem) {
        if let i = schemaHistories.firstIndex(where: { $0.appID == app.appID }) {
            if let site = schemaHistories[i].site, site != app.site {
                throw RequestProblem(.conflict, rule: "app_site_fixed", field: "site",
                                     detail: "app \(app.appID)'s schema versions were made at \(site): its postbacks and what they mean are that site's owner's. Register it at \(site), or the new site's app under its own App Store id")
            }
            try schemaHistories[i].record(app.schema, at: now)
        } else {
            schemaHistories.append(SchemaHistory(appID: app.appID, site: app.site, schema: app.schema))
        }
    }

    public mutating func add(_ campaign: AppleAdsCampaign) throws(RequestProblem) {
        guard campaign.campaignID > 0 else { throw .invalid("campaign_id", "out_of_range", "must be the campaign's id in Apple Ads, a positive integer") }
        try RegisteredName.check(campaign.name, field: "name")
        for (list, field) in [(campaign.adGroups, "ad_groups"), (campaign.keywords, "keywords")] {
            for (i, item) in list.enumerated() {
                guard item.id > 0 else { throw .invalid("\(field)[\(i)].id", "out_of_range", "must be a positive integer") }
                try RegisteredName.check(item.name, field: "\(field)[\(i)].name")
                if list[..<i].contains(where: { $0.id == item.id }) {
                    throw .invalid("\(field)[\(i)].id", "duplicate_id", "\(item.id) is named twice")
                }
            }
        }
        guard !appleAdsCampaigns.contains(where: { $0.campaignID == campaign.campaignID }) else {
            throw RequestProblem(.conflict, rule: "duplicate_campaign", field: "campaign_id", detail: "campaign \(campaign.campaignID) is already registered")
        }
        appleAdsCampaigns.append(campaign)
    }

    @discardableResult
    public mutating func removeAppleAdsCampaign(id: Int64) -> Bool {
        appleAdsCampaigns.removeEvery { $0.campaignID == id }
    }

    public func appleAdsCampaign(id: Int64?) -> AppleAdsCampaign? {
        id.flatMap { id in appleAdsCampaigns.first { $0.campaignID == id } }
    }

    /// Registers an app. Its schema becomes a new version from `now` if the app had another
    /// before it was removed; an app never registered gets version 1.
    public mutating func add(_ app: App, siteRules: SiteRules, now: Timestamp) throws(RequestProblem) {
        try check(app, siteRules: siteRules)
        guard !apps.contains(where: { $0.appID == app.appID }) else {
            throw RequestProblem(.conflict, rule: "duplicate_app", field: "app_id", detail: "app \(app.appID) is already registered; PUT changes it")
        }
        try recordSchema(of: app, at: now)
        apps.append(app)
    }

    /// Changes a registered app's site, name or schema; a changed schema is a new version from
    /// `now`, and postbacks set before it keep reading with the old one.
    public mutating func replace(_ app: App, siteRules: SiteRules, now: Timestamp) throws(RequestProblem) {
        try check(app, siteRules: siteRules)
        guard let i = apps.firstIndex(where: { $0.appID == app.appID }) else {
            throw RequestProblem(.notFound, rule: "unknown_app", field: "app_id", detail: "app \(app.appID) is not registered; POST registers it")
        }
        try recordSchema(of: app, at: now)
        apps[i] = app
    }

    private func check(_ app: App, siteRules: SiteRules) throws(RequestProblem) {
        guard app.appID > 0 else { throw .invalid("app_id", "out_of_range", "must be the app's App Store id, a positive integer") }
        if let violation = siteRules.check(app.site) { throw .invalid("site", "not_registrable_domain", violation.detail) }
        try RegisteredName.check(app.name, field: "name")
        try app.schema.check()
    }

    /// Removes an app; its schema's versions stay, to read the postbacks it had.
    @discardableResult
    public mutating func removeApp(appID: Int) -> Bool {
        apps.removeEvery { $0.appID == appID }
    }

    public func app(id: Int) -> App? { apps.first { $0.appID == id } }

    public mutating func add(_ network: AdNetwork) throws(RequestProblem) {
        guard !network.id.isEmpty, network.id.utf8.count <= 200,
              network.id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalid("id", "invalid_id", "must be the ad network's identifier as its postbacks carry it, e.g. example123.skadnetwork")
        }
        try RegisteredName.check(network.name, field: "name")
        for (i, campaign) in network.campaigns.enumerated() {
            let field = "campaigns[\(i)]"
            try RegisteredName.check(campaign.name, field: field + ".name")
            switch (campaign.sourceIdentifier, campaign.campaignID) {
            case (let digits?, nil):
                guard (2...4).contains(digits.utf8.count), digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                    throw .invalid(field + ".source_identifier", "invalid_source_identifier", "must be 2 to 4 digits; got \"\(digits.prefix(10))\"")
                }
            case (nil, let id?):
                guard (1...100).contains(id) else { throw .invalid(field + ".campaign_id", "out_of_range", "must be 1–100; got \(id)") }
            default:
                throw .invalid(field, "missing_field", "needs exactly one of source_identifier (SKAdNetwork 4, AdAttributionKit) and campaign_id (before 4.0)")
            }
            let key = campaign.sourceIdentifier ?? "#\(campaign.campaignID!)"
            if network.campaigns[..<i].contains(where: { ($0.sourceIdentifier ?? "#\($0.campaignID ?? 0)") == key }) {
                throw .invalid(field, "duplicate_campaign", "names the same identifier as an earlier campaign")
            }
        }
        guard !adNetworks.contains(where: { $0.id == network.id }) else {
            throw RequestProblem(.conflict, rule: "duplicate_ad_network", field: "id", detail: "ad network \(network.id) is already registered")
        }
        adNetworks.append(network)
    }

    @discardableResult
    public mutating func removeAdNetwork(id: String) -> Bool {
        adNetworks.removeEvery { $0.id == id }
    }

    /// The registered ad network, or one every endpoint knows (`AdNetwork.known`: Apple Ads).
    public func adNetwork(id: String) -> AdNetwork? { adNetworks.first { $0.id == id } ?? AdNetwork.known.first { $0.id == id } }

    /// Only what was registered: what the registrations' list and configuration compare.
    public func registeredAdNetwork(id: String) -> AdNetwork? { adNetworks.first { $0.id == id } }
}
