import AppDevelopers
import HTTPServer
import Marketers
import Primitives

/// What marketers spent, for cost per install and return on ad spend on the Apps view:
/// - `POST /api/spend`: a CSV upload (`SpendCSV`), at most the request size a body may have (the
///   page sends a long file in pieces); a row of the same day, app, ad network and campaign
///   replaces the one before;
/// - `GET /api/spend?from=&to=`: the rows of a period;
/// - `DELETE /api/spend?from=&to=`: removes them.
///
/// Spend is its advertiser's own: a row belongs to the site of its app, and a token reads and
/// writes only the rows of the sites it reads. A viewer token of one advertiser may give its
/// own spend, which changes nothing but its own numbers; a viewer token of every advertiser only
/// reads.
struct SpendRoutes: SurfaceRoutes {
    let context: HandlerContext
    let spend: SpendStore
    let apps: AppRegistryStore
    let access: AccessControl

    func routes(gate: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("spend", gate: gate, routes: [
                Route(.exact("/api/spend"), methods: ["GET", "HEAD"]) { request in
                    let readable = try access.readScope(request)
                    let (from, to) = try period(request, required: false)
                    let rows = spend.rows(from: from, to: to, reads: readable.allows)
                    return JSONResponse.make(200, JSONResponse.encode(rows))
                },
                Route(.exact("/api/spend"), methods: ["POST"]) { request in
                    let writable = try self.writable(request)
                    for item in request.queryItems where item.name != "advertiser" {
                        throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "POST takes the CSV as its body, and no parameter but advertiser")
                    }
                    // An app outside the token's sites is as unknown as one never registered:
                    // a token learns nothing of another advertiser's apps.
                    let registry = apps.registry
                    let rows = try SpendCSV.rows(from: request.body, site: { id in registry.app(id: id).map(\.site).flatMap { writable.allows($0) ? $0 : nil } },
                                                 today: SummaryAggregates.day(of: now))
                    for (n, row) in rows.enumerated() where !writable.allows(row.site) {
                        throw Problem(status: 403, rule: "outside_scope", field: "row \(n + 1): app_id",
                                      detail: "app \(row.appID) is at \(row.site), which is not one of the sites this token reads: spend is its advertiser's own")
                    }
                    var replaced = 0
                    try spend.update { (sheet) throws(RequestProblem) in replaced = try sheet.merge(rows) }
                    return JSONResponse.make(200, #"{"rows":\#(rows.count),"replaced":\#(replaced)}"#)
                },
                Route(.exact("/api/spend"), methods: ["DELETE"]) { request in
                    let writable = try self.writable(request)
                    let (from, to) = try period(request, required: true)
                    var removed = 0
                    try spend.update { sheet in removed = sheet.remove(days: from...to) { writable.allows($0.site) } }
                    return JSONResponse.make(200, #"{"removed":\#(removed)}"#)
                },
            ]),
        ]
    }

    /// Whose spend the request may change: the admin token's, every site's; a viewer token of one
    /// advertiser, its sites'; a viewer token of every advertiser, nothing.
    private func writable(_ request: HTTPRequest) throws(Problem) -> ReadScope {
        let scope = try access.readScope(request)
        if case .viewer(let viewer) = try access.caller(request), scope.isEverything || viewer.advertiser == nil {
            throw Problem(status: 403, rule: "viewer_token_read_only", detail: """
                this is a viewer token of every advertiser ("\(viewer.label)"): it may read the page, the summaries and the exports; \
                spend is given with the admin token or an advertiser's own viewer token
                """)
        }
        return scope
    }

    /// `from` and `to` as days (`YYYY-MM-DD`); without them, every day.
    private func period(_ request: HTTPRequest, required: Bool) throws(Problem) -> (Int32, Int32) {
        var from: Int32?, to: Int32?
        for item in request.queryItems {
            switch item.name {
            case "advertiser": continue
            case "from", "to":
                guard let day = SummaryQuery.day(item.value) else {
                    throw Problem(status: 400, rule: "invalid_date", field: item.name, detail: "\(item.name) must be a date such as 2026-11-20")
                }
                if item.name == "from" { from = day } else { to = day }
            default:
                throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "unknown query parameter \"\(item.name)\"; use from, to and advertiser")
            }
        }
        if required && (from == nil || to == nil) {
            throw Problem(status: 400, rule: "missing_parameter", field: from == nil ? "from" : "to", detail: "DELETE needs ?from=…&to=…: the days whose spend goes")
        }
        let period = (from ?? .min, to ?? .max)
        guard period.0 <= period.1 else { throw Problem(status: 400, rule: "invalid_period", field: "to", detail: "to must not be before from") }
        return period
    }
}
