import Postbacks
import RecordLog
import AppDevelopers
import Foundation
import HTTPServer
import Primitives

/// `GET /api/apps/summary?site=&from=YYYY-MM-DD&to=YYYY-MM-DD`: the Apps view's numbers; and
/// `GET /api/apple-ads/summary`, the Apple Ads view's, for the same period and site.
struct AppsSummaryRoutes: SurfaceRoutes {
    let context: HandlerContext
    let aggregates: AppsAggregates
    /// The Apps view's counts are whole once it is ready.
    let rebuild: PostbackRebuild
    let book: AppRegistryStore
    let appleAds: AppleAdsOutbox
    /// Looked-up Apple Ads names (`--apple-ads-platform`), beside the typed ones.
    var names: AppleAdsNames? = nil
    /// What marketers spent: cost per install and return on ad spend.
    var spend: SpendStore? = nil

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("apps summary", gate: bearer, routes: [
                Route(.exact("/api/apps/summary"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsLedger: true, node: { summary($0) }) { cluster, query, registry in
                        let shown = registry.scoped(to: query.readableSites)
                        return try ClusterAppsSummary.summary(cluster, query: query, registry: shown).json(shown, query: query)
                    }
                }),
                Route(.exact("/api/apps/summary/crosstab.csv"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsLedger: true, csv: "apps-crosstab", node: { aggregates.summary($0).crosstabCSV(book.registry.scoped(to: $0.readableSites)) }) {
                        cluster, query, registry in try ClusterAppsSummary.summary(cluster, query: query).crosstabCSV(registry.scoped(to: query.readableSites))
                    }
                }),
                Route(.exact("/api/apple-ads/summary"), methods: ["GET", "HEAD"], workers: workers, handler: { request, responder in
                    try scoped(request, responder, needsAppleAds: true, node: { appleAdsSummary($0) }) { cluster, query, registry in
                        try ClusterAppleAdsSummary.summary(cluster, query: query).json(AppleAdsNaming(registry: registry, lookedUp: names), query: query)
                    }
                }),
            ]),
        ]
    }

    func summary(_ query: AppsSummary.Query) -> String {
        let shown = book.registry.scoped(to: query.readableSites)
        let given = spend?.rows(from: query.from, to: query.to, reads: query.reads) ?? []
        return aggregates.summary(query, registry: shown).json(shown, query: query, spend: given)
    }

    /// `GET /api/apple-ads/summary?site=&from=&to=`: the Apple Ads view's numbers.
    func appleAdsSummary(_ query: AppsSummary.Query) -> String {
        appleAds.summary(query).json(AppleAdsNaming(registry: book.registry, lookedUp: names), query: query)
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
        asked.readableSites = readable.sites
        let query = asked
        guard scope == .cluster else {
            // The node's Apps view is whole once the postback ledger is (the cluster's is ClickHouse's).
            if needsLedger { try rebuild.requireReady("the Apps summary") }
            if needsAppleAds { try appleAds.requireReady() }
            if let csv { return responder.respond(CSVResponse.make(node(query), name: csv)) }
            let keptFrom = recordsKeptFrom().map { String($0.rfc3339.prefix(10)) }
            return responder.respond(JSONResponse.make(200, JSONResponse.scoped("node", available: self.cluster != nil,
                                                                                 recordsKeptFrom: keptFrom, node(query))))
        }
        guard let scopeOfCluster = self.cluster else { throw ClusterScope.unavailable }
        let registry = book.registry
        scopeOfCluster.answer(responder) {
            if let csv { return CSVResponse.make(try cluster(scopeOfCluster, query, registry), name: csv) }
            return JSONResponse.make(200, JSONResponse.scoped("cluster", available: true, nodes: ClusterNodes.json(scopeOfCluster), try cluster(scopeOfCluster, query, registry)))
        }
    }

    /// `site`, `from` and `to` (the 30 days up to today by default).
    private func query(_ items: [(name: String, value: String)]) -> Result<AppsSummary.Query, Problem> {
        let today = SummaryAggregates.day(of: now)
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
