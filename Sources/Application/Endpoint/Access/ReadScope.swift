import HTTPServer
import Marketers

/// What a caller may read: every site, or the sites of one advertiser. Every read path filters by
/// it (the summaries, the exports, the refusals, the metrics, the registrations), so that a token
/// scoped to one advertiser shows nothing of another's.
struct ReadScope: Sendable {
    /// Nil: every site.
    var sites: Set<String>?
    var advertiser: Advertiser?

    static let everything = ReadScope(sites: nil, advertiser: nil)
    /// What a request whose token cannot be resolved reads (a token revoked between its gate and
    /// its handler): nothing.
    static let nothing = ReadScope(sites: [], advertiser: nil)

    /// Whether this reads every site: the admin token, or a viewer token of every advertiser.
    var isEverything: Bool { sites == nil }

    func allows(_ site: String) -> Bool { sites?.contains(site) ?? true }

    /// A `?site=` (or the like) outside the scope is refused, never answered empty: an empty
    /// answer would tell a viewer that the site is served but quiet.
    func require(_ site: String?, field: String = "site") throws(Problem) {
        guard let site, !allows(site) else { return }
        throw Problem(status: 403, rule: "outside_scope", field: field,
                      detail: "\(field) \(site) is not one of the sites this token reads (\((sites ?? []).sorted().joined(separator: ", ")))")
    }

    /// The sites a query reads: the one it names, else every site in scope (nil: all).
    func sites(naming site: String?) -> Set<String>? {
        if let site { return [site] }
        return sites
    }
}
