import HTTPServer
import Primitives

/// The marketers' summary: the aggregates as JSON and CSV (the page itself is served from its
/// folder by the route table's fallback). Needs the token.
struct SummaryRoutes: SurfaceRoutes {
    let context: HandlerContext
    let summary: SummaryStore
    let book: SiteOwnerStore

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("summary", gate: bearer, routes: [
                Route(.exact("/api/summary"), methods: ["GET", "HEAD"], workers: workers) { try scoped($0, $1, csv: false) },
                Route(.exact("/api/summary.csv"), methods: ["GET", "HEAD"], workers: workers) { try scoped($0, $1, csv: true) },
                Route(.exact("/api/summary/crosstab.csv"), methods: ["GET", "HEAD"], workers: workers) { try scoped($0, $1, csv: true, crosstab: true) },
            ]),
        ]
    }

    /// The node's own numbers at once, or with `scope=cluster` every node's, counted in ClickHouse
    /// on the cluster scope's worker.
    func scoped(_ request: HTTPRequest, _ responder: HTTPResponder, csv: Bool, crosstab: Bool = false) throws {
        let (scope, items) = try ClusterScope.split(request.queryItems)
        guard scope == .cluster else { return responder.respond(try summary(request, items: items, csv: csv, crosstab: crosstab)) }
        guard let cluster else { throw ClusterScope.unavailable }
        let query = try self.query(request, items)
        let registry = book.registry.scoped(to: query.readableSites)
        cluster.answer(responder) {
            let aggregates = try ClusterSummary.aggregates(cluster, from: query.from, to: query.to)
            if crosstab { return CSVResponse.make(SummaryReport(aggregates, query).crosstabCSV(registry: registry), name: "crosstab") }
            if csv { return CSVResponse.make(SummaryReport.csv(aggregates, query, registry: registry)) }
            return JSONResponse.make(200, JSONResponse.scoped("cluster", available: true, nodes: ClusterNodes.json(cluster),
                                                      SummaryReport(aggregates, query).json(registry: registry, rejections: [:])))
        }
    }

    /// The query, within the token's scope: a site outside it is refused.
    func query(_ request: HTTPRequest, _ items: [(name: String, value: String)]) throws -> SummaryQuery {
        var query = try SummaryQuery.parse(items, today: SummaryAggregates.day(of: now)).get()
        let readable = try scope(request)
        try readable.require(query.site)
        query.readableSites = readable.sites
        return query
    }

    func summary(_ request: HTTPRequest, items: [(name: String, value: String)], csv: Bool, crosstab: Bool = false) throws -> HTTPResponse {
        let query = try self.query(request, items)
        let registry = book.registry.scoped(to: query.readableSites)
        func rebuilding(_ progress: SummaryStore.RebuildProgress) -> Problem {
            Problem(status: 503, rule: "summary_rebuilding",
                    detail: "the summary is being rebuilt from the log after a start (\(Int(progress.fraction * 100)) % done); reports are being accepted meanwhile")
        }
        if crosstab {
            return CSVResponse.make(try summary.read({ SummaryReport($0, query).crosstabCSV(registry: registry) }).mapError(rebuilding).get(), name: "crosstab")
        }
        if csv {
            return CSVResponse.make(try summary.read({ SummaryReport.csv($0, query, registry: registry) }).mapError(rebuilding).get())
        }
        let report = try summary.read({ SummaryReport($0, query) }).mapError(rebuilding).get()
        let keptFrom = recordsKeptFrom().map { String($0.rfc3339.prefix(10)) }
        return JSONResponse.make(200, JSONResponse.scoped("node", available: cluster != nil, recordsKeptFrom: keptFrom,
                                                  report.json(registry: registry, rejections: context.rejections.counts(readableSites: query.readableSites))))
    }
}
