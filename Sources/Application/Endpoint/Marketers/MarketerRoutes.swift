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
            ]),
            RouteGroup("marketers", gate: gate, routes: [
                Route(.exact("/api/whoami"), methods: ["GET", "HEAD"]) { request in
                    JSONResponse.make(200, access.describe(request))
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

    func report(_ scope: ReadScope) -> ArrivalsReport {
        ArrivalsReport(arrivals.book, servedSites: servedSites, apps: apps.registry.apps, scope: scope, now: now)
    }
}
