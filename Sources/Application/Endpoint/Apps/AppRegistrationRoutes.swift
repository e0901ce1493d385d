import Postbacks
import RecordLog
import AppDevelopers
import Foundation
import HTTPServer
import Primitives

/// The app developers' admin API: apps with their conversion-value schemas, and ad networks with
/// their campaigns. The same conventions as the site owners' registrations: the token, JSON in,
/// problem+json for every refusal, 201 with what was registered.
struct AppRegistrationRoutes: Sendable {
    let book: AppRegistryStore
    let servedSites: Set<String>
    /// What the request's token may read: a scoped viewer sees the apps at its sites, and not the
    /// ad networks' and Apple Ads campaigns' names, which every advertiser shares.
    var scope: ScopeOf = { (_) throws(Problem) in .everything }
    /// Told of each app registered: from then on its silence counts (`Arrivals`).
    var registered: @Sendable (App) -> Void = { _ in }

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("app registrations", gate: bearer, routes: [
                Route(.exact("/api/apps"), methods: ["GET", "HEAD"]) { request in
                    let readable = try scope(request)
                    return JSONResponse.make(200, JSONResponse.encode(book.registry.apps.filter { readable.allows($0.site) }))
                },
                Route(.exact("/api/apps"), methods: ["POST"]) { request in
                    var added: App?
                    let response = try register(request) { json, registry throws(RequestProblem) in
                        let app = try AppRegistryInput.app(from: json)
                        try registry.add(app, siteRules: book.siteRules)
                        try Registrations.requireServed(app.site, field: "site", servedSites: servedSites)
                        added = app
                        return JSONResponse.encode(app)
                    }
                    if let added { registered(added) }
                    return response
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

/// `GET /api/apps/summary?site=&from=YYYY-MM-DD&to=YYYY-MM-DD`: the Apps view's numbers; and
/// `GET /api/apple-ads/summary`, the Apple Ads view's, for the same period and site.
struct AppsSummaryRoutes: Sendable {
    let aggregates: AppsAggregates
    /// The Apps view's counts are whole once it is ready.
    let rebuild: PostbackRebuild
    let book: AppRegistryStore
    let appleAds: AppleAdsOutbox
    let clock: EndpointClock
    /// With `--clickhouse`: `?scope=cluster`.
    var cluster: ClusterScope? = nil
    /// The oldest record kept once retention has removed some; nil while the log holds everything.
    var recordsKeptFrom: @Sendable () -> Timestamp? = { nil }
    /// What the request's token may read.
    var scope: ScopeOf = { (_) throws(Problem) in .everything }
    /// The threads the reads that compute their answer run on, off the event loop (nil: the loop).
    var workers: WorkerPool? = nil

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("apps summary", gate: bearer, routes: [
                Route(.exact("/api/apps/summary"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsLedger: true, node: { summary($0) }) { cluster, query, registry in
                        try ClusterAppsSummary.summary(cluster, query: query).json(registry.within(query.within), query: query)
                    }
                }),
                Route(.exact("/api/apps/summary/crosstab.csv"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsLedger: true, csv: "apps-crosstab", node: { aggregates.summary($0).crosstabCSV(book.registry.within($0.within)) }) {
                        cluster, query, registry in try ClusterAppsSummary.summary(cluster, query: query).crosstabCSV(registry.within(query.within))
                    }
                }),
                Route(.exact("/api/apple-ads/summary"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsAppleAds: true, node: { appleAdsSummary($0) }) { cluster, query, registry in
                        try ClusterAppleAdsSummary.summary(cluster, query: query).json(registry, query: query)
                    }
                }),
            ]),
        ]
    }

    func summary(_ query: AppsSummary.Query) -> String {
        aggregates.summary(query).json(book.registry.within(query.within), query: query)
    }

    /// `GET /api/apple-ads/summary?site=&from=&to=`: the Apple Ads view's numbers.
    func appleAdsSummary(_ query: AppsSummary.Query) -> String {
        appleAds.summary(query).json(book.registry, query: query)
    }

    /// The node's numbers (`node`, at once), or with `scope=cluster` the cluster's (`cluster`, on
    /// the cluster scope's worker), each marked with its scope.
    /// `csv`: the answer is a CSV file of that name, not JSON.
    private func scoped(_ request: HTTPRequest, _ responder: HTTPResponder, needsLedger: Bool = false, needsAppleAds: Bool = false,
                        csv: String? = nil, node: (AppsSummary.Query) -> String,
                        cluster: @escaping @Sendable (ClusterScope, AppsSummary.Query, AppRegistry) throws -> String) throws {
        let (scope, items) = try ClusterScope.split(request.queryItems)
        var asked = try query(items).get()
        let readable = try self.scope(request)
        try readable.require(asked.site)
        asked.within = readable.sites
        let query = asked
        guard scope == .cluster else {
            // The node's Apps view is whole once the postback ledger is (the cluster's is ClickHouse's).
            if needsLedger { try rebuild.requireReady("the Apps summary") }
            if needsAppleAds { try appleAds.requireReady() }
            if let csv { return responder.respond(SummaryRoutes.csv(node(query), name: csv)) }
            let keptFrom = recordsKeptFrom().map { String($0.rfc3339.prefix(10)) }
            return responder.respond(JSONResponse.make(200, SummaryRoutes.scoped("node", available: self.cluster != nil,
                                                                                 recordsKeptFrom: keptFrom, node(query))))
        }
        guard let scopeOfCluster = self.cluster else { throw ClusterScope.unavailable }
        let registry = book.registry
        scopeOfCluster.answer(responder) {
            if let csv { return SummaryRoutes.csv(try cluster(scopeOfCluster, query, registry), name: csv) }
            return JSONResponse.make(200, SummaryRoutes.scoped("cluster", available: true, try cluster(scopeOfCluster, query, registry)))
        }
    }

    /// `site`, `from` and `to` (the 30 days up to today by default).
    private func query(_ items: [(name: String, value: String)]) -> Result<AppsSummary.Query, Problem> {
        let today = SummaryAggregates.day(of: clock.now())
        var query = AppsSummary.Query(site: nil, from: today - 29, to: today)
        for (name, value) in items {
            switch name {
            case "site": query.site = value.isEmpty ? nil : value
            case "advertiser": continue
            case "from", "to":
                guard let day = SummaryQuery.day(value) else {
                    return .failure(Problem(status: 400, rule: "invalid_date", field: name, detail: "\(name) must be a date such as 2026-11-20"))
                }
                if name == "from" { query.from = day } else { query.to = day }
            default:
                return .failure(Problem(status: 400, rule: "unknown_parameter", field: name,
                                        detail: "unknown query parameter \"\(name)\"; use advertiser, site, from and to"))
            }
        }
        guard query.from <= query.to, query.to - query.from < 3660 else {
            return .failure(Problem(status: 400, rule: "invalid_period", field: "to", detail: "to must not be before from, and a period is at most ten years"))
        }
        return .success(query)
    }
}
