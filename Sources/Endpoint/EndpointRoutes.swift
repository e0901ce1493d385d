import AttributionCore
import HTTPServer
import ReportStore

/// Maps paths to what answers them. Never sets or reads a cookie.
struct EndpointRoutes: HTTPHandler {
    static let reportPath = "/.well-known/private-click-measurement/report-attribution/"

    let ingest: ReportIngest
    let store: ReportStore
    let rejections: RejectionLog
    let metrics: EndpointMetrics
    let adminToken: String
    let siteOwners: SiteOwnerRoutes
    let summary: SummaryBook
    /// Takes the summary's checkpoint when one is due, at the end of a turn (after its commit).
    let checkpointer: SummaryCheckpointer?
    let book: SiteOwnerBook
    let clock: EndpointClock
    let publicFiles: StaticFiles?

    init(ingest: ReportIngest, store: ReportStore, rejections: RejectionLog, metrics: EndpointMetrics, adminToken: String,
         siteOwners: SiteOwnerRoutes, summary: SummaryBook, book: SiteOwnerBook, clock: EndpointClock, publicDirectory: String?,
         checkpointer: SummaryCheckpointer? = nil) {
        self.ingest = ingest
        self.store = store
        self.rejections = rejections
        self.metrics = metrics
        self.adminToken = adminToken
        self.siteOwners = siteOwners
        self.summary = summary
        self.checkpointer = checkpointer
        self.book = book
        self.clock = clock
        publicFiles = publicDirectory.map { StaticFiles(directory: $0) }
    }

    /// The turn's reports and triggers go to disk together, and their answers go out in this turn.
    func finishTurn() {
        store.commitQueued()
        checkpointer?.turnEnded()
    }

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        let path = request.path
        // WebKit always sends the trailing slash; people testing with curl often do not.
        if path == Self.reportPath || path == Self.reportPath.dropLast() {
            guard request.method == "POST" else { return responder.respond(Problem.methodNotAllowed(request, allow: "POST")) }
            return ingest.handle(request, responder: responder)
        }
        if path.hasPrefix(TriggerPath.prefix) {
            return siteOwners.trigger(request, responder: responder)
        }
        switch path {
        case SiteOwnerRoutes.pixelPath:
            responder.respond(siteOwners.pixel(request))
        case "/api/conversions", "/api/campaigns", "/admin/clock":
            guard path != "/admin/clock" || siteOwners.clock.isManual else { return responder.respond(notFound(path)) }
            guard AdminToken.matches(request.headers["Authorization"], token: adminToken) else { return responder.respond(unauthorized()) }
            switch path {
            case "/api/conversions": responder.respond(siteOwners.conversions(request))
            case "/api/campaigns": responder.respond(siteOwners.campaigns(request))
            default: responder.respond(siteOwners.setClock(request))
            }
        case "/healthz":
            guard request.method == "GET" || request.method == "HEAD" else {
                return responder.respond(Problem.methodNotAllowed(request, allow: "GET, HEAD"))
            }
            responder.respond(health())
        case "/api/reports", "/api/rejections", "/metrics", "/api/summary", "/api/summary.csv", "/api/reports.csv":
            guard request.method == "GET" || request.method == "HEAD" else {
                return responder.respond(Problem.methodNotAllowed(request, allow: "GET, HEAD"))
            }
            guard AdminToken.matches(request.headers["Authorization"], token: adminToken) else { return responder.respond(unauthorized()) }
            switch path {
            case "/api/reports": responder.respond(export(request))
            case "/api/reports.csv": responder.respond(export(request, csv: true))
            case "/api/summary", "/api/summary.csv": responder.respond(summaryResponse(request, csv: path.hasSuffix(".csv")))
            case "/api/rejections": responder.respond(rejectionsResponse())
            default:
                responder.respond(HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"],
                                               body: Array(metrics.prometheusText(store: store, rejections: rejections).utf8)))
            }
        default:
            guard let file = publicFiles?.response(path: path, ifNoneMatch: request.headers["If-None-Match"]) else {
                return responder.respond(notFound(path))
            }
            guard request.method == "GET" || request.method == "HEAD" else {
                return responder.respond(Problem.methodNotAllowed(request, allow: "GET, HEAD"))
            }
            responder.respond(file)
        }
    }

    private func summaryResponse(_ request: HTTPRequest, csv: Bool) -> HTTPResponse {
        let today = SummaryAggregates.day(of: clock.now())
        let query: SummaryQuery
        switch SummaryQuery.parse(request.queryItems, today: today) {
        case .success(let q): query = q
        case .failure(let problem): return problem.response
        }
        let registry = book.registry
        func rebuilding(_ progress: SummaryBook.RebuildProgress) -> HTTPResponse {
            Problem(status: 503, rule: "summary_rebuilding",
                    detail: "the summary is being rebuilt from the log after a start (\(Int(progress.fraction * 100)) % done); reports are being accepted meanwhile").response
        }
        if csv {
            switch summary.read({ SummaryReport.csv($0, query, registry: registry) }) {
            case .failure(let progress): return rebuilding(progress)
            case .success(let text):
                return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                          "Content-Disposition": "attachment; filename=\"summary.csv\""], body: Array(text.utf8))
            }
        }
        let report: SummaryReport
        switch summary.read({ SummaryReport($0, query) }) {
        case .failure(let progress): return rebuilding(progress)
        case .success(let r): report = r
        }
        let json = report.json(registry: registry, rejections: rejections.counts)
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"], body: Array(json.utf8))
    }

    private func notFound(_ path: Substring) -> HTTPResponse {
        Problem(status: 404, rule: "not_found", detail: "no resource at \(path)").response
    }

    private func unauthorized() -> HTTPResponse {
        Problem(status: 401, rule: "unauthorized",
                detail: "send Authorization: Bearer <token>; the token is in the data directory's admin-token file unless configured").response
    }


    private func health() -> HTTPResponse {
        if metrics.storeIsFailing(store), let error = store.writeError {
            return Problem(status: 503, rule: error.isDiskFull ? "disk_full" : "store_unavailable",
                           detail: "reports cannot be stored right now: \(error)").response
        }
        let body = "{\"status\":\"ok\",\"reports\":\(store.count)}\n"
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                            body: Array(body.utf8))
    }

    private func export(_ request: HTTPRequest, csv: Bool = false) -> HTTPResponse {
        var since: Timestamp?, until: Timestamp?
        for (name, value) in request.queryItems {
            switch name {
            case "since", "until":
                guard let time = Timestamp(rfc3339: value) else {
                    return Problem(status: 400, rule: "invalid_time", field: name,
                                   detail: "\(name) must be an RFC 3339 time such as 2026-11-20T10:00:00Z").response
                }
                if name == "since" { since = time } else { until = time }
            default:
                return Problem(status: 400, rule: "unknown_parameter", field: name,
                               detail: "unknown query parameter \"\(name)\"; use since and until").response
            }
        }
        let cursor = store.reports(since: since, until: until)
        if csv {
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                      "Content-Disposition": "attachment; filename=\"reports.csv\""],
                                stream: ReportExportStream(cursor: cursor, format: .csv))
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"],
                            stream: ReportExportStream(cursor: cursor, format: .ndjson))
    }

    private func rejectionsResponse() -> HTTPResponse {
        var json = "{\"counts\":{"
        for (i, (rule, count)) in rejections.counts.sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { json += "," }
            json += "\"\(rule)\":\(count)"
        }
        json += "},\"recent\":["
        for (i, entry) in rejections.recent.enumerated() {
            if i > 0 { json += "," }
            json += "{\"time\":\"\(entry.time.rfc3339)\",\"status\":\(entry.status),\"rule\":\"\(entry.rule)\",\"field\":"
            if let field = entry.field { JSONValue.writeString(field, to: &json) } else { json += "null" }
            json += ",\"detail\":"
            JSONValue.writeString(entry.detail, to: &json)
            json += ",\"body\":"
            JSONValue.writeString(String(decoding: entry.body, as: UTF8.self), to: &json)
            json += ",\"body_truncated\":\(entry.bodyTruncated)}"
        }
        json += "]}\n"
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                            body: Array(json.utf8))
    }
}
