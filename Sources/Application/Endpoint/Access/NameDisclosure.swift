/// Who is shown a registered name: the one rule every read path applies (the summaries, the
/// crosstabs, the overview and the page, the exports and their CSVs, `/api/campaigns`,
/// `/api/conversions`, the apps' registrations).
///
/// - A campaign's name is its publisher's and its advertiser's: shown to the owners of its source
///   site and of its destination, to no one else.
/// - A conversion's name is shown to the owner of its site.
/// - An app's name and schema are shown to the owner of the site its Info.plist names.
///
/// `sites` is what the reader may read (`ReadScope.sites`; nil: every site).
enum NameDisclosure {
    static func campaign(sourceSite: String, destination: String?, to sites: Set<String>?) -> Bool {
        guard let sites else { return true }
        return sites.contains(sourceSite) || destination.map(sites.contains) == true
    }

    /// The campaign a stored report was filed under, for a reader of the site it was sent to
    /// (`site`). A destination copy is filed only under a campaign whose destination is that
    /// site (`TimingModel.campaign(of:)`); a source copy's campaign is the source site's own,
    /// whatever destination it names (one that names another is `destination_mismatch`).
    static func campaign(sourceSite: String, onReportSentTo site: String, to sites: Set<String>?) -> Bool {
        campaign(sourceSite: sourceSite, destination: site == sourceSite ? nil : site, to: sites)
    }

    static func conversion(site: String, to sites: Set<String>?) -> Bool {
        sites?.contains(site) ?? true
    }

    static func app(site: String, to sites: Set<String>?) -> Bool {
        sites?.contains(site) ?? true
    }
}
