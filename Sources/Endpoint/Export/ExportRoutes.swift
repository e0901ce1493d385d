import AppDevelopers
import PCM
import Primitives
import SiteOwners
import HTTPServer
import PCMRecords
import Postbacks
import ReportStore

/// Every stored report, postback and Apple Ads token, as NDJSON or CSV, filtered by receive time.
/// Needs the token.
struct ExportRoutes: Sendable {
    let store: ReportStore
    let ledger: PostbackLedger
    let appleAds: AppleAdsOutbox
    let apps: AppBook

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("export", gate: bearer, routes: [
                Route(.exact("/api/reports"), methods: ["GET", "HEAD"]) { try export($0, csv: false) },
                Route(.exact("/api/reports.csv"), methods: ["GET", "HEAD"]) { try export($0, csv: true) },
                Route(.exact("/api/postbacks"), methods: ["GET", "HEAD"]) { try exportPostbacks($0, csv: false) },
                Route(.exact("/api/postbacks.csv"), methods: ["GET", "HEAD"]) { try exportPostbacks($0, csv: true) },
                Route(.exact("/api/apple-ads"), methods: ["GET", "HEAD"]) { try exportAppleAds($0, csv: false) },
                Route(.exact("/api/apple-ads.csv"), methods: ["GET", "HEAD"]) { try exportAppleAds($0, csv: true) },
            ]),
        ]
    }

    func export(_ request: HTTPRequest, csv: Bool) throws -> HTTPResponse {
        let (since, until) = try Self.period(request)
        let cursor = store.reports(since: since, until: until)
        if csv {
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                      "Content-Disposition": "attachment; filename=\"reports.csv\""],
                                stream: ReportExportStream(cursor: cursor, format: .csv))
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"],
                            stream: ReportExportStream(cursor: cursor, format: .ndjson))
    }

    func exportPostbacks(_ request: HTTPRequest, csv: Bool) throws -> HTTPResponse {
        let (since, until) = try Self.period(request)
        let stream = PostbackExportStream(cursor: store.postbacks(since: since, until: until), ledger: ledger, csv: csv)
        if csv {
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                      "Content-Disposition": "attachment; filename=\"postbacks.csv\""],
                                stream: stream)
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"], stream: stream)
    }

    /// From memory, not the log: the outbox holds every token's state. The lines are written as
    /// the socket drains, from a snapshot of the entries.
    func exportAppleAds(_ request: HTTPRequest, csv: Bool) throws -> HTTPResponse {
        let (since, until) = try Self.period(request)
        let entries = appleAds.all.filter { entry in
            since.map { entry.receivedAt >= $0 } ?? true && until.map { entry.receivedAt < $0 } ?? true
        }
        let stream = AppleAdsExportStream(entries: entries, registry: apps.registry, csv: csv)
        if csv {
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                      "Content-Disposition": "attachment; filename=\"apple-ads.csv\""], stream: stream)
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"], stream: stream)
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
