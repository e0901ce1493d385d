import Primitives
import HTTPServer
import PCMRecords
import Postbacks
import ReportStore

/// Every stored report, postback and Apple Ads token, as NDJSON or CSV, filtered by receive time.
/// Needs the token. Each export of the log is its kind's `RecordCodec`; the Apple Ads one joins
/// the outbox's memory and its final calls' records (`AppleAdsExport.rows`).
struct ExportRoutes: Sendable {
    let store: ReportStore
    let ledger: PostbackLedger
    /// Postbacks' retry counts are whole once it is ready.
    let postbackRebuild: PostbackRebuild
    /// Apple Ads tokens: those waiting, and those settled by records from before 2026-11-26.
    let appleAds: AppleAdsOutbox
    let apps: AppBook

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        let logExports: [(path: String, codec: any RecordCodec)] = [
            ("/api/reports", ReportExportCodec()),
            ("/api/postbacks", PostbackExportCodec(ledger: ledger)),
        ]
        var routes: [Route] = []
        for (path, codec) in logExports {
            let needsLedger = path == "/api/postbacks"
            let ready: @Sendable () throws -> Void = { [postbackRebuild] in
                if needsLedger { try postbackRebuild.requireReady("the postback export") }
            }
            routes.append(Route(.exact(path), methods: ["GET", "HEAD"]) {
                try ready()
                return try export(codec, $0, .ndjson, fileName: "")
            })
            routes.append(Route(.exact(path + ".csv"), methods: ["GET", "HEAD"]) {
                try ready()
                return try export(codec, $0, .csv, fileName: String(path.dropFirst("/api/".count)))
            })
        }
        routes.append(Route(.exact("/api/apple-ads"), methods: ["GET", "HEAD"]) { try exportAppleAds($0, .ndjson) })
        routes.append(Route(.exact("/api/apple-ads.csv"), methods: ["GET", "HEAD"]) { try exportAppleAds($0, .csv) })
        return [RouteGroup("export", gate: bearer, routes: routes)]
    }

    func export(_ codec: any RecordCodec, _ request: HTTPRequest, _ format: ExportStream.Format, fileName: String) throws -> HTTPResponse {
        let (since, until) = try Self.period(request)
        return ExportStream(format, columns: codec.columns, rows: store.rows(of: codec, since: since, until: until))
            .response(fileName: fileName)
    }

    /// Every token received in the period with where it stands (`AppleAdsExport.rows`), written as
    /// the socket drains.
    func exportAppleAds(_ request: HTTPRequest, _ format: ExportStream.Format) throws -> HTTPResponse {
        try appleAds.requireReady()
        let (since, until) = try Self.period(request)
        return ExportStream(format, columns: AppleAdsExport.columns,
                            rows: AppleAdsExport.rows(outbox: appleAds, store: store, since: since, until: until, registry: apps.registry))
            .response(fileName: "apple-ads")
    }

    /// `since` and `until`, RFC 3339, both optional.
    static func period(_ request: HTTPRequest) throws(Problem) -> (Timestamp?, Timestamp?) {
        var since: Timestamp?, until: Timestamp?
        for (name, value) in request.queryItems {
            switch name {
            case "since", "until":
                guard let time = Timestamp(rfc3339: value) else {
                    throw Problem(status: 400, rule: "invalid_time", field: name,
                                  detail: "\(name) must be an RFC 3339 time such as 2026-11-20T10:00:00Z")
                }
                if name == "since" { since = time } else { until = time }
            default:
                throw Problem(status: 400, rule: "unknown_parameter", field: name,
                              detail: "unknown query parameter \"\(name)\"; use since and until")
            }
        }
        return (since, until)
    }
}
