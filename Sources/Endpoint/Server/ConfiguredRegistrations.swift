import AppDevelopers
import Primitives

/// The config file's registrations, added at start: conversions and campaigns that are not in
/// the registry yet; apps, ad networks and Apple Ads campaigns replacing what is registered under
/// their ids. One that clashes with what is there stops the start, with the reason.
enum ConfiguredRegistrations {
    static func ensure(_ configuration: EndpointConfiguration, in book: SiteOwnerBook) throws {
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

    static func ensure(_ configuration: EndpointConfiguration, in book: AppBook) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                for app in configuration.apps where registry.app(id: app.appID) != app {
                    try Registrations.requireServed(app.site, field: "apps: site", servedSites: Set(configuration.sites))
                    if registry.app(id: app.appID) != nil { registry.removeApp(appID: app.appID) }
                    try registry.add(app, siteRules: book.siteRules)
                }
                for network in configuration.adNetworks where registry.adNetwork(id: network.id) != network {
                    if registry.adNetwork(id: network.id) != nil { registry.removeAdNetwork(id: network.id) }
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
}
