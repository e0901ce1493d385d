import Primitives
import SiteOwners
import HTTPServer
import PCMRecords
import Postbacks
import RecordLog

/// Every stored report, postback and Apple Ads token, as NDJSON or CSV, filtered by receive time.
/// Needs the token. Each export of the log is its kind's `RecordCodec`; the Apple Ads one joins
/// the outbox's memory and its final calls' records (`AppleAdsExport.rows`).
struct ExportRoutes: SurfaceRoutes {
    let context: HandlerContext
    let store: RecordLog
    let ledger: PostbackLedger
    /// Postbacks' retry counts are whole once it is ready.
    let postbackRebuild: PostbackRebuild
    /// Apple Ads tokens: those waiting, and those settled by an earlier version's final calls, which do not carry their token.
    let appleAds: AppleAdsOutbox
    let apps: AppRegistryStore
    /// Looked-up Apple Ads names (`--apple-ads-platform`), beside the typed ones.
    var names: AppleAdsNames? = nil
    /// The threads that read and write every export, off the event loop.
    let producers: BodyProducers
    /// What each sealed segment holds: a scoped export passes over the others unread.
    let segmentSites: SegmentSites

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        let logExports: [(path: String, codec: any RecordCodec)] = [
            ("/api/reports", ReportExportCodec()),
            ("/api/postbacks", PostbackExportCodec(ledger: ledger, schema: apps.postbackSchemaVersions)),
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
        let (since, until) = try RequestedPeriod.parse(request, alsoTaking: ["advertiser"])
        let sites = try scope(request).sites
        let skipping = sites.map { segmentSites.skipping(codec.kind, unless: $0) }
        return try ExportStream(format, columns: codec.columns, rows: store.rows(of: codec, since: since, until: until, skipping: skipping),
                                shape: Self.shown(to: sites, columns: codec.columns))
            .response(fileName: fileName, producers: producers)
    }

    /// Every token received in the period with where it stands (`AppleAdsExport.rows`), written as
    /// the socket drains.
    func exportAppleAds(_ request: HTTPRequest, _ format: ExportStream.Format) throws -> HTTPResponse {
        try appleAds.requireReady()
        let (since, until) = try RequestedPeriod.parse(request, alsoTaking: ["advertiser"])
        let sites = try scope(request).sites
        let rows = AppleAdsExport.rows(outbox: appleAds, store: store, since: since, until: until,
                                       naming: AppleAdsNaming(registry: apps.registry, lookedUp: names))
        return try ExportStream(format, columns: AppleAdsExport.columns, rows: rows, shape: Self.shown(to: sites, columns: AppleAdsExport.columns))
            .response(fileName: "apple-ads", producers: producers)
    }

    /// A row as a reader of `sites` is shown it: nil unless its `site` (the served site the
    /// record was sent to) is one of them, and a report's campaign only as `NameDisclosure`
    /// allows. Nil (every row as it is) when `sites` is nil.
    static func shown(to sites: Set<String>?, columns: [String]) -> ((ExportRow) -> ExportRow?)? {
        guard let sites else { return nil }
        // Every export has the column; one without it shows a scoped viewer nothing.
        guard let column = columns.firstIndex(of: "site") else { return { _ in nil } }
        let campaign = columns.firstIndex(of: "campaign")
        let sourceSite = columns.firstIndex(of: "source_site")
        return { row in
            guard column < row.cells.count, sites.contains(row.cells[column]) else { return nil }
            guard let campaign, let sourceSite, campaign < row.cells.count, sourceSite < row.cells.count, !row.cells[campaign].isEmpty,
                  !NameDisclosure.campaign(sourceSite: row.cells[sourceSite], onReportSentTo: row.cells[column], to: sites) else { return row }
            var hidden = row
            hidden.cells[campaign] = ""
            hidden.members.removeAll { $0.key == "campaign" }
            return hidden
        }
    }
}
