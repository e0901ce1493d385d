import AppDevelopers
import SiteOwners

extension Registry {
    /// The registrations a scope may read: the conversions and campaigns of its sites. A report
    /// sent to one advertiser names another's conversion only by its trigger data.
    func within(_ sites: Set<String>?) -> Registry {
        guard let sites else { return self }
        var copy = self
        for c in conversions where !sites.contains(c.site) { copy.removeConversion(site: c.site, name: c.name) }
        for c in campaigns where !sites.contains(c.sourceSite) { copy.removeCampaign(sourceSite: c.sourceSite, name: c.name) }
        return copy
    }
}

extension AppRegistry {
    /// The apps a scope may read, with their names and schemas; ad networks and Apple Ads
    /// campaigns are every advertiser's.
    func within(_ sites: Set<String>?) -> AppRegistry {
        guard let sites else { return self }
        var copy = self
        for app in apps where !sites.contains(app.site) { copy.removeApp(appID: app.appID) }
        return copy
    }
}
