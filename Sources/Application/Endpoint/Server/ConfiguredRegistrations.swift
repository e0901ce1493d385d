import AppDevelopers
import Marketers
import Primitives
import Relays
import SiteOwners

/// The config file's registrations, put into the registries at start and at each reload:
/// conversions and campaigns new to the registry are added, and a changed one replaces its
/// registered self (a campaign only in its name and end: `Registry.replaceCampaign` refuses the
/// rest); apps, ad networks, Apple Ads campaigns, advertisers and relay destinations replace what
/// is registered under their ids. With `exact` (a cluster, where the file is the only source) what
/// the file no longer holds is removed too. One that clashes with what is there is refused, with
/// the reason, and changes nothing.
struct ConfiguredRegistrations {
    let configuration: EndpointConfiguration
    /// The sites served now: a reload checks against the running set, which only a restart changes.
    let servedSites: Set<String>
    /// The registry then holds the file's registrations and nothing else.
    let exact: Bool
    /// When a changed app schema's new version begins.
    let now: Timestamp

    /// The four registries the file's registrations go into.
    struct Books {
        let sites: SiteOwnerStore
        let apps: AppRegistryStore
        let advertisers: AdvertiserRegistryStore
        let relays: RelayRegistryStore
    }

    /// What changed, by the file's key ("campaigns", "apps"…).
    struct Changes: Equatable {
        var keys: [String] = []
    }

    /// Puts the file's registrations into `books`, or, if one is refused, changes none of them:
    /// each is merged into a copy first, and only when all four pass are they saved.
    @discardableResult
    func apply(to books: Books) throws(RequestProblem) -> Changes {
        var changes = Changes()
        try apply(to: books, recording: &changes)
        return changes
    }

    /// The same, with what was saved in `changes` even when a later registry refuses: only a write
    /// through the admin API between the check and the save, or a registry that cannot be saved,
    /// leaves some saved and others not.
    func apply(to books: Books, recording changes: inout Changes) throws(RequestProblem) {
        let (sites, apps, advertisers, relays) = try check(against: books)
        if sites != books.sites.registry {
            try books.sites.update { (registry) throws(RequestProblem) in try merge(into: &registry, siteRules: books.sites.siteRules) }
            changes.keys.append("site registrations")
        }
        if apps != books.apps.registry {
            try books.apps.update { (registry) throws(RequestProblem) in try merge(into: &registry, siteRules: books.apps.siteRules) }
            changes.keys.append("app registrations")
        }
        if advertisers != books.advertisers.registry {
            try books.advertisers.update { (registry) throws(RequestProblem) in try merge(into: &registry, siteRules: books.advertisers.siteRules) }
            changes.keys.append("advertisers")
        }
        if relays != books.relays.registry {
            let apps = books.apps.registry
            try books.relays.update { (registry) throws(RequestProblem) in try merge(into: &registry, apps: apps) }
            changes.keys.append("relays")
        }
    }

    /// The four registries as the file would make them, changing none: the refusal if one is refused.
    @discardableResult
    func check(against books: Books) throws(RequestProblem) -> (Registry, AppRegistry, AdvertiserRegistry, RelayRegistry) {
        var sites = books.sites.registry, apps = books.apps.registry
        var advertisers = books.advertisers.registry, relays = books.relays.registry
        try merge(into: &sites, siteRules: books.sites.siteRules)
        try merge(into: &apps, siteRules: books.apps.siteRules)
        try merge(into: &advertisers, siteRules: books.advertisers.siteRules)
        try merge(into: &relays, apps: apps)
        return (sites, apps, advertisers, relays)
    }

    /// `change`, with a refusal's field named within the file: "campaigns[2].source_id".
    private func within(_ key: String, _ index: Int?, _ change: () throws(RequestProblem) -> Void) throws(RequestProblem) {
        do {
            try change()
        } catch {
            var problem = error
            let place = key + (index.map { "[\($0)]" } ?? "")
            let field = problem.field.map { place + "." + $0 } ?? place
            // "source_site names x.example" becomes "campaigns[2].source_site names x.example".
            if let old = problem.field, problem.detail.hasPrefix(old) { problem.detail = field + problem.detail.dropFirst(old.count) }
            problem.field = field
            throw problem
        }
    }

    /// How the start and a reload say which registration was refused and why.
    static func refusal(_ problem: RequestProblem) -> String {
        "registration refused: " + (problem.field.map { problem.detail.hasPrefix($0) ? "" : $0 + ": " } ?? "") + problem.detail
    }

    func merge(into registry: inout Registry, siteRules: SiteRules) throws(RequestProblem) {
        if exact {
            for c in registry.conversions where !configuration.conversions.contains(c) { registry.removeConversion(site: c.site, name: c.name) }
        }
        for (i, c) in configuration.conversions.enumerated() where !registry.conversions.contains(c) {
            try within("conversions", i) { () throws(RequestProblem) in
                try Registrations.requireServed(c.site, field: "site", servedSites: servedSites)
                // A conversion is its name and trigger data: changed in the file, it is registered anew.
                registry.removeConversion(site: c.site, name: c.name)
                try registry.add(c, siteRules: siteRules)
            }
        }
        if exact {
            for c in registry.campaigns where !configuration.campaigns.contains(where: { $0.sourceSite == c.sourceSite && $0.name == c.name }) {
                registry.removeCampaign(sourceSite: c.sourceSite, name: c.name)
            }
        }
        for (i, c) in configuration.campaigns.enumerated() where !registry.campaigns.contains(c) {
            try within("campaigns", i) { () throws(RequestProblem) in
                try Registrations.requireServed(c.sourceSite, field: "source_site", servedSites: servedSites)
                if registry.campaigns.contains(where: { $0.sourceSite == c.sourceSite && $0.name == c.name }) {
                    try registry.replaceCampaign(sourceSite: c.sourceSite, name: c.name, with: c, siteRules: siteRules)
                } else {
                    try registry.add(c, siteRules: siteRules)
                }
            }
        }
    }

    /// An app whose schema the file changed gets a new version from `now`.
    func merge(into registry: inout AppRegistry, siteRules: SiteRules) throws(RequestProblem) {
        if exact {
            for app in registry.apps where !configuration.apps.contains(where: { $0.appID == app.appID }) { registry.removeApp(appID: app.appID) }
            for network in registry.adNetworks where !configuration.adNetworks.contains(where: { $0.id == network.id }) {
                registry.removeAdNetwork(id: network.id)
            }
            for campaign in registry.appleAdsCampaigns where !configuration.appleAdsCampaigns.contains(where: { $0.campaignID == campaign.campaignID }) {
                registry.removeAppleAdsCampaign(id: campaign.campaignID)
            }
        }
        for (i, app) in configuration.apps.enumerated() where registry.app(id: app.appID) != app {
            try within("apps", i) { () throws(RequestProblem) in
                try Registrations.requireServed(app.site, field: "site", servedSites: servedSites)
                if registry.app(id: app.appID) != nil {
                    try registry.replace(app, siteRules: siteRules, now: now)
                } else {
                    try registry.add(app, siteRules: siteRules, now: now)
                }
            }
        }
        for (i, network) in configuration.adNetworks.enumerated() where registry.registeredAdNetwork(id: network.id) != network {
            try within("ad_networks", i) { () throws(RequestProblem) in
                if registry.registeredAdNetwork(id: network.id) != nil { registry.removeAdNetwork(id: network.id) }
                try registry.add(network)
            }
        }
        for (i, campaign) in configuration.appleAdsCampaigns.enumerated() where registry.appleAdsCampaign(id: campaign.campaignID) != campaign {
            try within("apple_ads_campaigns", i) { () throws(RequestProblem) in
                registry.removeAppleAdsCampaign(id: campaign.campaignID)
                try registry.add(campaign)
            }
        }
    }

    func merge(into registry: inout AdvertiserRegistry, siteRules: SiteRules) throws(RequestProblem) {
        if exact {
            for advertiser in registry.advertisers where !configuration.advertisers.contains(where: { $0.id == advertiser.id }) {
                registry.remove(id: advertiser.id)
            }
        }
        // Every changed one out first, then in: a site that moves from one to another in the
        // file must not meet its old owner, whatever their order.
        let changed = configuration.advertisers.filter { registry.advertiser(id: $0.id) != $0 }
        for advertiser in changed { registry.remove(id: advertiser.id) }
        for advertiser in changed {
            try within("advertisers", configuration.advertisers.firstIndex(of: advertiser)) { () throws(RequestProblem) in
                for (i, site) in advertiser.sites.enumerated() {
                    try Registrations.requireServed(site, field: "sites[\(i)]", servedSites: servedSites)
                }
                try registry.add(advertiser, siteRules: siteRules)
            }
        }
    }

    /// Relay destinations: the file's version of one replaces the registered one.
    func merge(into registry: inout RelayRegistry, apps: AppRegistry) throws(RequestProblem) {
        let context = RelayRegistry.Context(servedSites: servedSites, apps: Set(apps.apps.map(\.appID)),
                                            allowHTTP: configuration.relayAllowHTTP)
        if exact {
            for destination in registry.destinations where !configuration.relays.contains(where: { $0.name == destination.name }) {
                registry.remove(name: destination.name)
            }
        }
        for (i, destination) in configuration.relays.enumerated() {
            // Compared as the registry keeps it (its URL as `RelayURL` writes it back): a file
            // spelling it otherwise is no change, and the destination's deliveries are not restarted.
            var probe = RelayRegistry()
            let kept = (try? probe.add(destination, in: context)) != nil ? probe.destination(named: destination.name) : nil
            guard registry.destination(named: destination.name) != (kept ?? destination) else { continue }
            try within("relays", i) { () throws(RequestProblem) in
                registry.remove(name: destination.name)
                try registry.add(destination, in: context)
            }
        }
    }

    /// With `--cluster`, the config file is the only source: a node whose registry holds more
    /// (registered through its admin API before, or taken out of the file since) would count
    /// otherwise than the others, and is refused at start with what to remove.
    static func requireOnlyConfigured(_ configuration: EndpointConfiguration, sites: SiteOwnerStore, apps: AppRegistryStore,
                                      advertisers: AdvertiserRegistryStore, relays: RelayRegistryStore) throws {
        let registry = sites.registry, appRegistry = apps.registry
        var extra: [String] = []
        extra += registry.conversions.filter { !configuration.conversions.contains($0) }.map { "conversion \($0.site)/\($0.name)" }
        extra += registry.campaigns.filter { !configuration.campaigns.contains($0) }.map { "campaign \($0.sourceSite)/\($0.name)" }
        extra += appRegistry.apps.filter { !configuration.apps.contains($0) }.map { "app \($0.appID)" }
        extra += appRegistry.adNetworks.filter { !configuration.adNetworks.contains($0) }.map { "ad network \($0.id)" }
        extra += advertisers.registry.advertisers.filter { !configuration.advertisers.contains($0) }.map { "advertiser \($0.id)" }
        extra += relays.registry.destinations.filter { destination in !configuration.relays.contains { $0.name == destination.name } }
            .map { "relay destination \($0.name)" }
        extra += appRegistry.appleAdsCampaigns.filter { !configuration.appleAdsCampaigns.contains($0) }.map { "Apple Ads campaign \($0.campaignID)" }
        guard extra.isEmpty else {
            throw EndpointConfiguration.ParseError(description: """
                --cluster: this node's registrations hold what the config file does not (\(extra.prefix(5).joined(separator: ", "))\(extra.count > 5 ? ", …" : "")). \
                Every node must count alike: add them to the config file every node has, or remove them from \(configuration.dataDirectory) \
                (registry.json, apps.json, advertisers.json, relays.json) before starting with --cluster
                """)
        }
    }
}
