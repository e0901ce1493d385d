import HTTPServer
import Locking
import Marketers
import Primitives

/// Who is asking: the holder of the admin token, or of a viewer token.
enum Caller: Sendable {
    case admin
    case viewer(ViewerToken)
}

/// The admin token and the viewer tokens, and what each may do. The admin token may do
/// everything; a viewer token may read (GET and HEAD, and `POST /api/plist-check`, which changes
/// nothing) and is refused every write with 403 that says what it may do.
final class AccessControl: Sendable {
    /// Replaced by a reload when the token file or the environment gives another.
    private let admin: Locked<String>
    let viewers: ViewerTokenStore
    let advertisers: AdvertiserRegistryStore

    init(adminToken: String, viewers: ViewerTokenStore, advertisers: AdvertiserRegistryStore) {
        admin = Locked(adminToken)
        self.viewers = viewers
        self.advertisers = advertisers
    }

    var adminToken: String {
        get { admin.withLock { $0 } }
        set { admin.withLock { $0 = newValue } }
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

/// What a read path asks of the request it answers: the scope of its token, and of its
/// `?advertiser=` (`AccessControl.readScope`).
typealias ScopeOf = @Sendable (HTTPRequest) throws(Problem) -> ReadScope
