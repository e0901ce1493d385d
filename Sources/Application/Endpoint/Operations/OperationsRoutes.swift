import ClickHouseExport
import Foundation
import Primitives
import HTTPServer
import RecordLog

/// What operators and their tools call: health (open to load balancers), metrics, the refusals,
/// and the manual clock (which exists only with `--manual-clock`).
struct OperationsRoutes: SurfaceRoutes {
    let context: HandlerContext
    /// This node's name (`--node`), checked to need no escaping.
    let node: String
    let store: RecordLog
    let clock: EndpointClock
    /// Every surface's series after the node's own, in the order they are written.
    var sources: [any MetricsSource] = []
    /// The export's state for `/healthz`, when there is an export.
    var exportHealth: (@Sendable () -> ClickHouseExporter.Status)? = nil
    /// When each site and app in a scope last received something.
    var arrivals: (@Sendable (ReadScope) -> ArrivalsReport)? = nil

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("health", routes: [
                Route(.exact("/healthz"), methods: ["GET", "HEAD"], answer: health),
            ]),
            RouteGroup("operations", gate: bearer, routes: [
                Route(.exact("/metrics"), methods: ["GET", "HEAD"], answer: prometheus),
                Route(.exact("/api/rejections"), methods: ["GET", "HEAD"], answer: rejectionsResponse),
            ] + (clock.isManual ? [Route(.exact("/admin/clock"), methods: ["POST"], answer: setClock)] : [])),
        ]
    }

    /// The status for anyone (a load balancer needs only its code); the node, its counts and the
    /// export's state (ClickHouse's address, its last error, which may quote a row) for a token
    /// that reads every site.
    func health(_ request: HTTPRequest) throws -> HTTPResponse {
        let detailed = (try? scope(request))?.isEverything == true
        if context.metrics.storeIsFailing(store), let error = store.writeError {
            let problem = Problem.storeFailed(error, "reports cannot be stored right now")
            throw detailed ? problem : Problem(status: 503, rule: problem.rule, detail: "reports cannot be stored right now")
        }
        guard detailed else { return JSONResponse.make(200, "{\"status\":\"ok\"}") }
        var body = "{\"status\":\"ok\",\"node\":\"\(node)\",\"reports\":\(store.count(of: .report))"
        if let exportHealth {
            body += ",\"export\":"
            exportHealth().healthJSON.write(to: &body)
        }
        return JSONResponse.make(200, body + "}")
    }

    func prometheus(_ request: HTTPRequest) throws -> HTTPResponse {
        // The node's name as a label of its own series, the way Prometheus joins it to the others.
        let nodeInfo = "# HELP attribution_node_info This node's name (--node), as a label.\n"
            + "# TYPE attribution_node_info gauge\nattribution_node_info{node=\"\(node)\"} 1\n"
        let readable = try scope(request)
        let arrivalsText = arrivals.map { $0(readable).prometheusText() } ?? ""
        // The node's totals count every advertiser's records: a scoped token gets its sites' series.
        guard readable.sites == nil else {
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"], body: Array((nodeInfo + arrivalsText).utf8))
        }
        let now = clock.now()
        let text = sources.reduce(nodeInfo + context.metrics.prometheusText(store: store, rejections: context.rejections)) { $0 + $1.prometheusText(now: now) }
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"], body: Array((text + arrivalsText).utf8))
    }

    static let clockRange = Timestamp(rfc3339: "1970-01-01T00:00:00Z")!.millisecondsSinceEpoch...Timestamp(rfc3339: "8999-12-31T23:59:59Z")!.millisecondsSinceEpoch

    /// `POST /admin/clock {"now": RFC 3339}`: the manual clock's new time.
    func setClock(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try JSONParser().parseBody(request.body)
        guard case .object(let members) = body,
              let member = members.first(where: { $0.key == "now" }), case .string(let text) = member.value,
              let time = Timestamp(rfc3339: text) else {
            throw Problem(status: 400, rule: "invalid_time", field: "now", detail: "send {\"now\": \"2026-11-20T10:00:00Z\"} (RFC 3339)")
        }
        // Times the endpoint derives from now (cut-offs, key rotations) must stay writable too.
        guard Self.clockRange.contains(time.millisecondsSinceEpoch) else {
            throw Problem(status: 422, rule: "out_of_range", field: "now", detail: "now must be from 1970 to 8999")
        }
        clock.set(time)
        return JSONResponse.make(200, "{\"now\":\"\(time.rfc3339)\"}")
    }

    func rejectionsResponse(_ request: HTTPRequest) throws -> HTTPResponse {
        let readableSites = try scope(request).sites
        var json = "{\"counts\":{"
        for (i, (rule, count)) in context.rejections.counts(readableSites: readableSites).sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { json += "," }
            json += "\"\(rule)\":\(count)"
        }
        json += "},\"recent\":["
        for (i, entry) in context.rejections.recent.filter({ entry in readableSites.map { sites in entry.site.map(sites.contains) ?? false } ?? true }).enumerated() {
            if i > 0 { json += "," }
            json += "{\"time\":\"\(entry.time.rfc3339)\",\"status\":\(entry.status),\"rule\":\"\(entry.rule)\",\"field\":"
            if let field = entry.field { JSONValue.writeString(field, to: &json) } else { json += "null" }
            json += ",\"detail\":"
            JSONValue.writeString(entry.detail, to: &json)
            json += ",\"site\":"
            if let site = entry.site { JSONValue.writeString(site, to: &json) } else { json += "null" }
            json += ",\"body\":"
            JSONValue.writeString(String(decoding: entry.body, as: UTF8.self), to: &json)
            json += ",\"body_truncated\":\(entry.bodyTruncated)}"
        }
        json += "]}"
        return JSONResponse.make(200, json)
    }
}
