import Postbacks
import RecordLog
import AppDevelopers
import Foundation
import HTTPServer
import Primitives

/// The app developers' admin API: apps with their conversion-value schemas, and ad networks with
/// their campaigns. The same conventions as the site owners' registrations: the token, JSON in,
/// problem+json for every refusal, 201 with what was registered.
struct AppRegistrationRoutes: SurfaceRoutes {
    let context: HandlerContext
    let book: AppRegistryStore
    /// Told of each app registered: from then on its silence counts (`Arrivals`).
    var registered: @Sendable (App) -> Void = { _ in }

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("app registrations", gate: bearer, routes: [
                Route(.exact("/api/apps"), methods: ["GET", "HEAD"]) { request in
                    let readable = try scope(request)
                    let registry = book.registry
                    return JSONResponse.make(200, "[" + registry.apps.filter { readable.allows($0.site) }.map { Self.json($0, registry) }.joined(separator: ",") + "]")
                },
                Route(.exact("/api/apps"), methods: ["POST"]) { request in
                    var added: App?
                    let response = try register(request) { json, registry throws(RequestProblem) in
                        let app = try AppRegistryInput.app(from: json)
                        try registry.add(app, siteRules: book.siteRules, now: now)
                        try Registrations.requireServed(app.site, field: "site", servedSites: context.served.sites)
                        added = app
                        return Self.json(app, registry)
                    }
                    if let added { registered(added) }
                    return response
                },
                // A change to a registered app; a changed schema is a new version from now.
                Route(.exact("/api/apps"), methods: ["PUT"]) { request in
                    let parsed = try JSONParser().parseBody(request.body)
                    var changed = ""
                    try book.update { (registry) throws(RequestProblem) in
                        let app = try AppRegistryInput.app(from: parsed)
                        try registry.replace(app, siteRules: book.siteRules, now: now)
                        try Registrations.requireServed(app.site, field: "site", servedSites: context.served.sites)
                        changed = Self.json(app, registry)
                    }
                    return JSONResponse.make(200, changed)
                },
                Route(.exact("/api/apps"), methods: ["DELETE"]) { request in
                    try remove(request, key: "app_id", numeric: true) { registry, value in Int(value).map { registry.removeApp(appID: $0) } ?? false }
                },
                Route(.exact("/api/ad-networks"), methods: ["GET", "HEAD"]) { request in
                    try requireUnscoped(request, "ad networks")
                    return JSONResponse.make(200, JSONResponse.encode(book.registry.adNetworks))
                },
                Route(.exact("/api/ad-networks"), methods: ["POST"]) { request in
                    try register(request) { json, registry throws(RequestProblem) in
                        let network = try AppRegistryInput.adNetwork(from: json)
                        try registry.add(network)
                        return JSONResponse.encode(network)
                    }
                },
                Route(.exact("/api/ad-networks"), methods: ["DELETE"]) { request in
                    try remove(request, key: "id") { registry, value in registry.removeAdNetwork(id: value) }
                },
                Route(.exact("/api/apple-ads/campaigns"), methods: ["GET", "HEAD"]) { request in
                    try requireUnscoped(request, "Apple Ads campaigns")
                    return JSONResponse.make(200, JSONResponse.encode(book.registry.appleAdsCampaigns))
                },
                Route(.exact("/api/apple-ads/campaigns"), methods: ["POST"]) { request in
                    try register(request) { json, registry throws(RequestProblem) in
                        let campaign = try AppRegistryInput.appleAdsCampaign(from: json)
                        try registry.add(campaign)
                        return JSONResponse.encode(campaign)
                    }
                },
                Route(.exact("/api/apple-ads/campaigns"), methods: ["DELETE"]) { request in
                    try remove(request, key: "campaign_id", numeric: true) { registry, value in Int64(value).map { registry.removeAppleAdsCampaign(id: $0) } ?? false }
                },
            ]),
        ]
    }

    /// An app as registered, with every version of its schema (`schema_versions`, oldest first:
    /// `version`, `effective_from`, null for version 1, which also reads what came before it, and `schema`).
    static func json(_ app: App, _ registry: AppRegistry) -> String {
        var text = JSONResponse.encode(app)
        let versions = registry.history(appID: app.appID)?.versions ?? []
        guard text.hasSuffix("}") else { return text }
        text.removeLast()
        return text + (text.hasSuffix("{") ? "" : ",") + "\"schema_versions\":" + JSONResponse.encode(versions) + "}"
    }

    /// A registration no site owns: every advertiser's campaigns may be in it.
    private func requireUnscoped(_ request: HTTPRequest, _ what: String) throws(Problem) {
        let readable = try scope(request)
        guard !readable.isEverything else { return }
        throw Problem(status: 403, rule: "outside_scope",
                      detail: "the registered \(what) are shared by every advertiser; this token reads \(readable.advertiser.map { "advertiser \($0.id)'s" } ?? "no") sites alone, and the summaries name its campaigns")
    }

    private func register(_ request: HTTPRequest, _ add: (JSONValue, inout AppRegistry) throws(RequestProblem) -> String) throws -> HTTPResponse {
        try Registrations.register(request, in: book, add)
    }

    private func remove(_ request: HTTPRequest, key: String, numeric: Bool = false,
                        _ change: (inout AppRegistry, String) -> Bool) throws -> HTTPResponse {
        for item in request.queryItems where item.name != key {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "DELETE takes only ?\(key)=…")
        }
        guard let value = request.queryItems.first(where: { $0.name == key })?.value else {
            throw Problem(status: 400, rule: "missing_parameter", field: key, detail: "DELETE needs ?\(key)=…")
        }
        // The id as registrations write it: digits only, so that +42, 042 and -0 name nothing by accident.
        if numeric && !(JSONValue.isIntegerLiteral(value) && JSONValue.integerValue(value).map { $0 > 0 } == true) {
            throw Problem(status: 400, rule: "invalid_parameter", field: key, detail: "\(key) must be a positive integer; got \"\(value.prefix(30))\"")
        }
        return try Registrations.remove(in: book, notFound: "nothing registered with \(key) \"\(value)\"") { change(&$0, value) }
    }
}
