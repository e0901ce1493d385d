import AppDevelopers
import SiteOwners

extension Registry {
    /// The registrations a scope is shown (`NameDisclosure`): the conversions of its sites, and
    /// the campaigns whose source site or destination is one of them. A report sent to one
    /// advertiser names another's conversion only by its trigger data.
    func scoped(to sites: Set<String>?) -> Registry {
        guard let sites else { return self }
        var copy = self
        for c in conversions where !NameDisclosure.conversion(site: c.site, to: sites) { copy.removeConversion(site: c.site, name: c.name) }
        for c in campaigns where !NameDisclosure.campaign(sourceSite: c.sourceSite, destination: c.destination, to: sites) {
            copy.removeCampaign(sourceSite: c.sourceSite, name: c.name)
        }
        return copy
    }
}

extension AppRegistry {
    /// The apps a scope may read, with their names and schemas; ad networks and Apple Ads
    /// campaigns are every advertiser's.
    func scoped(to sites: Set<String>?) -> AppRegistry {
        guard let sites else { return self }
        var copy = self
        for app in apps where !NameDisclosure.app(site: app.site, to: sites) { copy.removeApp(appID: app.appID) }
        // What an app's values mean is its owner's too: only the apps shown keep their versions.
        return copy.keepingSchemaHistories(of: Set(copy.apps.map(\.appID)))
    }
}
