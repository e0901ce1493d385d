import AppDevelopers
import HTTPServer
import Marketers
import Primitives

/// What marketers and the agencies that serve them use beside the summaries:
/// - `/api/advertisers`: the advertisers and the sites each owns (GET for any token; POST and
///   DELETE for the admin token);
/// - `GET /api/whoami`: the role of the token presented, for the page to show;
/// - `GET /api/arrivals`: when each site and app last received something, and which are silent.
struct MarketerRoutes: SurfaceRoutes {
    let context: HandlerContext
    /// The `--site`s in the order they were configured: the arrivals list them so.
    let servedSites: [String]
    let advertisers: AdvertiserRegistryStore
    let access: AccessControl
    let arrivals: Arrivals
    let apps: AppRegistryStore
    /// `--cluster`: registrations come from the shared files, and the page shows the change to
    /// make there instead of a form.
    var clusterMode = false

    func routes(bearer gate: @escaping RouteGroup.Gate, registrationGate: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("advertisers", gate: registrationGate, routes: [
                Route(.exact("/api/advertisers"), methods: ["GET", "HEAD"]) { request in
                    let readable = try access.readScope(request)
                    let shown = advertisers.registry.advertisers.filter { readable.isEverything || readable.advertiser?.id == $0.id }
                    return JSONResponse.make(200, JSONResponse.encode(shown))
                },
                Route(.exact("/api/advertisers"), methods: ["POST"]) { request in
                    try Registrations.register(request, in: advertisers) { json, registry throws(RequestProblem) in
                        let advertiser = try AdvertiserInput.advertiser(from: json)
                        try registry.add(advertiser, siteRules: advertisers.siteRules)
                        for (i, site) in advertiser.sites.enumerated() {
                            try Registrations.requireServed(site, field: "sites[\(i)]", servedSites: context.served.sites)
                        }
                        return JSONResponse.encode(advertiser)
                    }
                },
                Route(.exact("/api/advertisers"), methods: ["DELETE"]) { request in
                    for item in request.queryItems where item.name != "id" {
                        throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "DELETE takes only ?id=…")
                    }
                    guard let id = request.queryItems.first(where: { $0.name == "id" })?.value else {
                        throw Problem(status: 400, rule: "missing_parameter", field: "id", detail: "DELETE needs ?id=…")
                    }
                    // Its tokens would read whoever is registered under the id next.
                    let tokens = access.viewers.list.tokens.filter { $0.advertiser == id }
                    guard tokens.isEmpty else {
                        throw Problem(status: 409, rule: "advertiser_has_tokens", field: "id",
                                      detail: "advertiser \(id) has \(tokens.count) viewer token(s) (\(tokens.map(\.id).joined(separator: ", "))): revoke them first with `attribution-endpoint viewer-token revoke ID`, so that none reads whoever is registered as \(id) next")
                    }
                    return try Registrations.remove(in: advertisers, notFound: "no advertiser with id \"\(id.prefix(64))\"") { $0.remove(id: id) }
                },
                // Viewer tokens, as `attribution-endpoint viewer-token` makes them: listed without
                // their secrets (a scoped token sees its advertiser's), made and revoked with the
                // admin token; a new token is in the answer once and never again.
                Route(.exact("/api/viewer-tokens"), methods: ["GET", "HEAD"]) { request in
                    let readable = try access.readScope(request)
                    let shown = access.viewers.list.tokens.filter { readable.isEverything || ($0.advertiser != nil && $0.advertiser == readable.advertiser?.id) }
                    return JSONResponse.make(200, "[" + shown.map(Self.json).joined(separator: ",") + "]")
                },
                Route(.exact("/api/viewer-tokens"), methods: ["POST"]) { request in
                    let json = try JSONParser().parseBody(request.body)
                    guard case .object(let members) = json else {
                        throw Problem(status: 400, rule: "wrong_type", detail: "the body is an object: {\"label\": \"Acme's dashboard\", \"advertiser\": \"acme\"}")
                    }
                    var label: String?, advertiser: String?
                    for member in members {
                        switch (member.key, member.value) {
                        case ("label", .string(let text)): label = text
                        case ("advertiser", .string(let text)): advertiser = text
                        case ("advertiser", .null): advertiser = nil
                        case ("label", _), ("advertiser", _):
                            throw Problem(status: 422, rule: "wrong_type", field: member.key, detail: "\(member.key) must be a string")
                        default:
                            throw Problem(status: 422, rule: "unknown_field", field: member.key, detail: "a viewer token has a label and an advertiser")
                        }
                    }
                    guard let label else { throw Problem(status: 422, rule: "missing_field", field: "label", detail: "label says who the token is for") }
                    if let advertiser, advertisers.registry.advertiser(id: advertiser) == nil {
                        throw Problem(status: 422, rule: "unknown_advertiser", field: "advertiser",
                                      detail: "no advertiser \"\(advertiser.prefix(64))\" is registered (POST /api/advertisers)")
                    }
                    guard access.viewers.list.tokens.count < Self.maxViewerTokens else {
                        throw Problem(status: 409, rule: "too_many_tokens", detail: "the endpoint keeps at most \(Self.maxViewerTokens) viewer tokens; revoke those no one uses")
                    }
                    let made: (record: ViewerToken, token: String)
                    do {
                        made = try access.viewers.create(label: label, advertiser: advertiser, now: now)
                    } catch let problem as RequestProblem {
                        throw Problem(problem)
                    }
                    var out = Self.json(made.record)
                    out.removeLast()
                    out += ",\"token\":"
                    JSONValue.writeString(made.token, to: &out)
                    return JSONResponse.make(201, out + ",\"shown_once\":\"the endpoint keeps only its SHA-256: copy the token now, it cannot be shown again\"}")
                },
                Route(.exact("/api/viewer-tokens"), methods: ["DELETE"]) { request in
                    guard let id = request.queryItems.first(where: { $0.name == "id" })?.value, request.queryItems.count == 1 else {
                        throw Problem(status: 400, rule: "missing_parameter", field: "id", detail: "DELETE takes only ?id=…, the token's id")
                    }
                    guard try access.viewers.revoke(id: id) else {
                        throw Problem(status: 404, rule: "not_found", field: "id", detail: "no viewer token with id \"\(id.prefix(64))\"")
                    }
                    return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"], body: [])
                },
            ]),
            RouteGroup("marketers", gate: gate, routes: [
                Route(.exact("/api/whoami"), methods: ["GET", "HEAD"]) { request in
                    var described = access.describe(request)
                    described.removeLast()
                    // The endpoint's time: the page marks the day that is not over yet.
                    return JSONResponse.make(200, described + ",\"cluster\":\(clusterMode),\"now\":\"\(now.rfc3339)\"}")
                },
                Route(.exact("/api/arrivals"), methods: ["GET", "HEAD"]) { request in
                    if let item = request.queryItems.first(where: { $0.name != "advertiser" }) {
                        throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "/api/arrivals takes only advertiser")
                    }
                    return JSONResponse.make(200, report(try access.readScope(request)).json())
                },
            ]),
        ]
    }

    /// Viewer tokens the endpoint keeps at most: each is a person or a dashboard.
    static let maxViewerTokens = 1000

    /// A token's record, without its secret or hash.
    static func json(_ token: ViewerToken) -> String {
        var out = "{\"id\":"
        JSONValue.writeString(token.id, to: &out)
        out += ",\"label\":"
        JSONValue.writeString(token.label, to: &out)
        out += ",\"advertiser\":"
        if let advertiser = token.advertiser { JSONValue.writeString(advertiser, to: &out) } else { out += "null" }
        out += ",\"created_at\":"
        JSONValue.writeString(token.createdAt, to: &out)
        return out + "}"
    }

    func report(_ scope: ReadScope) -> ArrivalsReport {
        ArrivalsReport(arrivals.book, servedSites: servedSites, apps: apps.registry.apps, scope: scope, now: now)
    }
}
