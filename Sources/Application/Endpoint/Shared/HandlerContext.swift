import HTTPServer
import PCM
import Primitives

/// What the handlers of every surface share: whose `X-Forwarded-Host` to believe, where refusals
/// are counted and kept, the metrics and the clock, what a token may read, the threads reads run
/// on, the cluster. One value, made once by the server, and the one context every surface's
/// routes are built from (`SurfaceRoutes`).
struct HandlerContext: Sendable {
    let trustedProxies: [AddressRange]
    let rejections: RejectionLog
    let metrics: EndpointMetrics
    let clock: @Sendable () -> Timestamp
    /// The `--site`s: the one check of a request's host, and the site a refusal is kept with.
    var served = ServedSites([], developmentMode: false)
    /// When each site last received something on each path.
    var arrivals: Arrivals? = nil
    /// What the request's token may read (`AccessControl.readScope`).
    var scope: ScopeOf = { (_) throws(Problem) in .everything }
    /// The threads reads that compute their answer run on, off the event loop (nil: the loop).
    var reads: WorkerPool? = nil
    /// With `--clickhouse`: `?scope=cluster`.
    var cluster: ClusterScope? = nil
    /// The oldest record kept once retention has removed some; nil while the log holds everything.
    var recordsKeptFrom: @Sendable () -> Timestamp? = { nil }

    /// The one place a refusal becomes an answer: what a gate or a handler threw, as the router
    /// hands it over. Refusals on the paths devices and browsers send to (`/.well-known/…`) are
    /// also counted and kept in the rejection ring, since nobody reads those answers: what was
    /// sent is kept, its body or, for a GET, its URL.
    func answer(refusal error: any Error, to request: HTTPRequest) -> HTTPResponse {
        let problem = Problem(refusal: error)
        if request.path.hasPrefix("/.well-known/") {
            let isRead = request.method == "GET" || request.method == "HEAD"
            let host = (try? RequestedHost.of(request, trustedProxies: trustedProxies)) ?? nil
            record(problem, site: served.owner(ofHost: host), kept: isRead ? Array(request.target.utf8) : request.body)
        }
        return problem.response
    }

    /// A refusal found after the handler returned (a postback read on a worker thread): counted,
    /// kept and answered as the router would have.
    func refuse(_ problem: Problem, site: String?, body: [UInt8], responder: HTTPResponder) {
        record(problem, site: site, kept: body)
        responder.respond(problem.response)
    }

    func record(_ problem: Problem, site: String?, kept: [UInt8]) {
        rejections.record(time: clock(), status: problem.status, rule: problem.rule, field: problem.field,
                          detail: problem.detail, site: site, body: kept)
    }

    /// Something arrived on `path` at `site` (a served site, or any host on a development server
    /// without `--site`).
    func arrived(_ path: Arrivals.Path, at site: String) {
        arrivals?.received(path, site: site, at: clock())
    }

    /// What arrived on `path` at `site` was accepted.
    func accepted(_ path: Arrivals.Path, at site: String, time: Timestamp) {
        arrivals?.accepted(path, site: site, at: time)
    }

    /// The served site a request was sent to, or 421 `site_not_served` (`ServedSites`).
    func servedSite(of request: HTTPRequest, what: String) throws(Problem) -> String {
        try served.site(of: request, trustedProxies: trustedProxies, what: what)
    }
}

extension Problem {
    /// What a handler threw, as a problem: the rule types say what failed, and this says which
    /// status that is.
    init(refusal error: any Error) {
        switch error {
        case let problem as Problem: self = problem
        case let problem as RequestProblem: self.init(problem)
        case let rejection as ReportRejection: self.init(rejection)
        case let busy as Route.WorkersBusy:
            self.init(status: 503, rule: "reads_busy", detail: "too many reads of \(busy.path) are waiting; try again shortly")
        default: self.init(status: 400, rule: "invalid_request", detail: "\(error)")
        }
    }
}
