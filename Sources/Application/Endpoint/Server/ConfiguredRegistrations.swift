import AppDevelopers
import Marketers
import Primitives
import Relays

/// The config file's registrations, added at start: conversions and campaigns that are not in
/// the registry yet; apps, ad networks and Apple Ads campaigns replacing what is registered under
/// their ids. One that clashes with what is there stops the start, with the reason.
enum ConfiguredRegistrations {
    static func ensure(_ configuration: EndpointConfiguration, in book: SiteOwnerStore) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                for c in configuration.conversions where !registry.conversions.contains(c) {
                    try Registrations.requireServed(c.site, field: "conversions: site", servedSites: Set(configuration.sites))
                    try registry.add(c, siteRules: book.siteRules)
                }
                for c in configuration.campaigns where !registry.campaigns.contains(c) {
                    try Registrations.requireServed(c.sourceSite, field: "campaigns: source_site", servedSites: Set(configuration.sites))
                    try registry.add(c, siteRules: book.siteRules)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file registration refused: \(error.detail)")
        }
    }

    /// An app whose schema the file changed gets a new version from `now`, the start.
    static func ensure(_ configuration: EndpointConfiguration, in book: AppRegistryStore, now: Timestamp) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                for app in configuration.apps where registry.app(id: app.appID) != app {
                    try Registrations.requireServed(app.site, field: "apps: site", servedSites: Set(configuration.sites))
                    if registry.app(id: app.appID) != nil {
                        try registry.replace(app, siteRules: book.siteRules, now: now)
                    } else {
                        try registry.add(app, siteRules: book.siteRules, now: now)
                    }
                }
                for network in configuration.adNetworks where registry.registeredAdNetwork(id: network.id) != network {
                    if registry.registeredAdNetwork(id: network.id) != nil { registry.removeAdNetwork(id: network.id) }
                    try registry.add(network)
                }
                for campaign in configuration.appleAdsCampaigns where registry.appleAdsCampaign(id: campaign.campaignID) != campaign {
                    registry.removeAppleAdsCampaign(id: campaign.campaignID)
                    try registry.add(campaign)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file registration refused: \(error.detail)")
        }
    }

    static func ensure(_ configuration: EndpointConfiguration, in book: AdvertiserRegistryStore) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                // Every changed one out first, then in: a site that moves from one to another in the
                // file must not meet its old owner, whatever their order.
                let changed = configuration.advertisers.filter { registry.advertiser(id: $0.id) != $0 }
                for advertiser in changed { registry.remove(id: advertiser.id) }
                for advertiser in changed {
                    for (i, site) in advertiser.sites.enumerated() {
                        try Registrations.requireServed(site, field: "advertisers: sites[\(i)]", servedSites: Set(configuration.sites))
                    }
                    try registry.add(advertiser, siteRules: book.siteRules)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file registration refused: \(error.detail)")
        }
    }

    /// Relay destinations: the file's version of one replaces the registered one.
    static func ensure(_ configuration: EndpointConfiguration, in book: RelayRegistryStore, apps: AppRegistryStore) throws {
        let context = RelayRegistry.Context(servedSites: Set(configuration.sites), apps: Set(apps.registry.apps.map(\.appID)),
                                            allowHTTP: configuration.relayAllowHTTP)
        do {
            try book.update { (registry) throws(RequestProblem) in
                for destination in configuration.relays where registry.destination(named: destination.name) != destination {
                    registry.remove(name: destination.name)
                    try registry.add(destination, in: context)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file relay destination refused: \(error.detail)")
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
