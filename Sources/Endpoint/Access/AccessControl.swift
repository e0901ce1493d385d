import AppDevelopers
import HTTPServer
import Marketers
import Primitives
import SiteOwners

/// Who is asking: the holder of the admin token, or of a viewer token.
enum Caller: Sendable {
    case admin
    case viewer(ViewerToken)
}

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

/// The admin token and the viewer tokens, and what each may do. The admin token may do
/// everything; a viewer token may read (GET and HEAD, and `POST /api/plist-check`, which changes
/// nothing) and is refused every write with 403 that says what it may do.
final class AccessControl: Sendable {
    let adminToken: String
    let viewers: ViewerTokenBook
    let advertisers: AdvertiserBook

    init(adminToken: String, viewers: ViewerTokenBook, advertisers: AdvertiserBook) {
        self.adminToken = adminToken
        self.viewers = viewers
        self.advertisers = advertisers
    }

    /// The caller the request's `Authorization` names; 401 without a token this endpoint knows.
    func caller(_ request: HTTPRequest) throws(Problem) -> Caller {
        let header = request.headers["Authorization"]
        if AdminToken.matches(header, token: adminToken) { return .admin }
        if let presented = AdminToken.bearer(header), let viewer = viewers.lookup(presented) { return .viewer(viewer) }
        throw Problem.unauthorized
    }

    /// A route group's gate: any known token for `viewersMay` methods, the admin token for the rest.
    func gate(viewersMay methods: Set<String> = ["GET", "HEAD"]) -> RouteGroup.Gate {
        { [self] request in
            guard case .viewer(let viewer) = try caller(request) else { return }
            let scope = try scope(of: viewer)
            guard methods.contains(request.method) else {
                throw Problem(status: 403, rule: "viewer_token_read_only", detail: """
                    this is a viewer token ("\(viewer.label)"): it may read the page, the summaries and the exports\
                    \(scope.advertiser.map { " of advertiser \($0.id)'s sites" } ?? ""); \(request.method) \(request.path) \
                    changes the endpoint and needs the admin token
                    """)
            }
        }
    }

    /// What the request reads: its token's scope, narrowed to one advertiser's sites by
    /// `?advertiser=ID` (every read path takes it). A scoped token naming another advertiser is
    /// refused 403; an id nobody registered 404.
    func readScope(_ request: HTTPRequest) throws(Problem) -> ReadScope {
        let readable = scope(request)
        guard let named = request.queryItems.first(where: { $0.name == "advertiser" })?.value, !named.isEmpty else { return readable }
        // A scoped token learns nothing of other ids, not even whether they exist.
        guard readable.isEverything else {
            guard let own = readable.advertiser, own.id == named else {
                throw Problem(status: 403, rule: "outside_scope", field: "advertiser",
                              detail: "this token reads \(readable.advertiser.map { "advertiser \($0.id)'s" } ?? "no") numbers alone")
            }
            return readable
        }
        guard let advertiser = advertisers.registry.advertiser(id: named) else {
            throw Problem(status: 404, rule: "unknown_advertiser", field: "advertiser", detail: "no advertiser with id \"\(named.prefix(64))\"")
        }
        return ReadScope(sites: Set(advertiser.sites), advertiser: advertiser)
    }

    /// What the request's token may read. For a request its gate let through; anything else reads
    /// nothing.
    func scope(_ request: HTTPRequest) -> ReadScope {
        switch try? caller(request) {
        case .admin?: return .everything
        case .viewer(let viewer)?: return (try? scope(of: viewer)) ?? .nothing
        case nil: return .nothing
        }
    }

    /// A scoped token whose advertiser is gone reads nothing, and says why.
    private func scope(of viewer: ViewerToken) throws(Problem) -> ReadScope {
        guard let id = viewer.advertiser else { return .everything }
        guard let advertiser = advertisers.registry.advertiser(id: id) else {
            throw Problem(status: 403, rule: "advertiser_unknown",
                          detail: "this viewer token reads advertiser \(id), which is not registered (any more); ask for a new token")
        }
        return ReadScope(sites: Set(advertiser.sites), advertiser: advertiser)
    }

    /// `GET /api/whoami`: the role the page shows, and what it may read.
    func describe(_ request: HTTPRequest) -> String {
        var out = "{\"role\":"
        switch try? caller(request) {
        case .viewer(let viewer)?:
            out += "\"viewer\",\"label\":"
            JSONValue.writeString(viewer.label, to: &out)
            out += ",\"advertiser\":"
            let scope = self.scope(request)
            if let advertiser = scope.advertiser {
                out += "{\"id\":"
                JSONValue.writeString(advertiser.id, to: &out)
                out += ",\"name\":"
                JSONValue.writeString(advertiser.name, to: &out)
                out += "}"
            } else { out += "null" }
            out += ",\"sites\":" + Self.list(scope.sites)
        case .admin?:
            out += "\"admin\",\"label\":null,\"advertiser\":null,\"sites\":null"
        case nil:
            // Revoked between the gate and here: it reads nothing.
            out += "\"viewer\",\"label\":null,\"advertiser\":null,\"sites\":[]"
        }
        return out + "}"
    }

    static func list(_ sites: Set<String>?) -> String {
        guard let sites else { return "null" }
        return "[" + sites.sorted().map { s in var t = ""; JSONValue.writeString(s, to: &t); return t }.joined(separator: ",") + "]"
    }
}

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

/// What a read path asks of the request it answers: the scope of its token, and of its
/// `?advertiser=` (`AccessControl.readScope`).
typealias ScopeOf = @Sendable (HTTPRequest) throws(Problem) -> ReadScope
