import AppDevelopers
import Primitives

/// What `Arrivals` knows, as the page, `/api/arrivals` and `/metrics` show it: each served site's
/// and each registered app's last arrival by path, and a warning for each that has heard nothing
/// for 48 hours, naming what to check.
struct ArrivalsReport {
    struct Row {
        var key: String
        var name: String?
        var site: String
        /// When a request last reached each path, and when one was last accepted there.
        var last: [Arrivals.Path: Int64]
        var accepted: [Arrivals.Path: Int64]
        var firstKnown: Int64
        var latest: Int64? { last.values.max() }
        var latestAccepted: Int64? { accepted.values.max() }
        /// Silent since: the last accepted arrival, or when it became known if none ever was.
        /// What merely reached a path (junk anyone can send) does not count.
        var quietSince: Int64 { latestAccepted ?? firstKnown }
    }

    var now: Timestamp
    var sites: [Row] = []
    var apps: [Row] = []

    static let sitePaths: [Arrivals.Path] = Arrivals.Path.allCases
    static let appPaths: [Arrivals.Path] = [.skadnetwork, .adattributionkit]

    /// `servedSites` empty (a development server): the sites something arrived at.
    init(_ book: Arrivals.Book, servedSites: [String], apps registered: [App], scope: ReadScope, now: Timestamp) {
        self.now = now
        let siteNames = servedSites.isEmpty ? Array(book.sites.keys) : servedSites
        for site in siteNames.sorted() where scope.allows(site) {
            let times = book.sites[site] ?? Arrivals.Times(firstKnown: now.millisecondsSinceEpoch)
            sites.append(Row(key: site, name: nil, site: site, last: Self.paths(times.last), accepted: Self.paths(times.accepted),
                             firstKnown: times.firstKnown))
        }
        for app in registered.sorted(by: { $0.appID < $1.appID }) where scope.allows(app.site) {
            let key = String(app.appID)
            let times = book.apps[key] ?? Arrivals.Times(firstKnown: now.millisecondsSinceEpoch)
            apps.append(Row(key: key, name: app.name, site: app.site, last: Self.paths(times.last), accepted: Self.paths(times.accepted),
                            firstKnown: times.firstKnown))
        }
    }

    private static func paths(_ times: [String: Int64]) -> [Arrivals.Path: Int64] {
        var out: [Arrivals.Path: Int64] = [:]
        for (name, ms) in times { if let path = Arrivals.Path(rawValue: name) { out[path] = ms } }
        return out
    }

    func isSilent(_ row: Row) -> Bool {
        now.millisecondsSinceEpoch &- row.quietSince >= Arrivals.silenceWarning
    }

    /// How long a row has been quiet, as a person says it: "50 hours", "21 days".
    func quiet(_ row: Row) -> String { Self.duration(now.millisecondsSinceEpoch &- row.quietSince) }

    /// Hours up to three days, then days: "516 hours" is read as "21 days".
    static func duration(_ milliseconds: Int64) -> String {
        let hours = max(0, milliseconds / 3_600_000)
        if hours < 72 { return hours == 1 ? "1 hour" : "\(hours) hours" }
        return "\(hours / 24) days"
    }

    /// What to check, in the words of the key or the front that decides it.
    func warning(site row: Row) -> String {
        if let reached = row.latest, reached > row.quietSince {
            return "Requests reach https://\(row.site)/.well-known/ (the last \(Self.duration(now.millisecondsSinceEpoch &- reached)) ago), "
                + "but none was accepted for \(quiet(row)): /api/rejections says why they were refused. If nothing but those "
                + "arrives, check that the apps' Info.plist and the sites' pixels and links name https://\(row.site), and that the front passes "
                + "the path to this endpoint with the site's Host."
        }
        let what = row.latest == nil ? "Nothing has reached https://\(row.site)/.well-known/ in the \(quiet(row)) since this endpoint began serving it"
            : "Nothing has reached https://\(row.site)/.well-known/ for \(quiet(row))"
        return what + ". Check that the site's DNS points at the front, that its TLS certificate is valid, and that the front (nginx, Caddy, a CDN) passes /.well-known/private-click-measurement/, /.well-known/skadnetwork/, /.well-known/appattribution/ and /apple-ads/ to this endpoint with the site's Host."
    }

    func warning(app row: Row) -> String {
        let name = row.name.map { "\($0) (\(row.key))" } ?? row.key
        let what = row.latest == nil ? "No postback copy for app \(name) in the \(quiet(row)) since it was registered"
            : "No postback copy for app \(name) for \(quiet(row))"
        return what + ". Check that its Info.plist names https://\(row.site) in NSAdvertisingAttributionReportEndpoint (SKAdNetwork copies) and in AttributionCopyEndpoint (AdAttributionKit copies), in the build on the App Store; devices send copies only of winning postbacks, 24 to 48 hours or more after an install."
    }

    func json() -> String {
        func time(_ ms: Int64?) -> String { ms.map { "\"\(Timestamp(millisecondsSinceEpoch: $0).rfc3339)\"" } ?? "null" }
        func row(_ r: Row, paths: [Arrivals.Path], app: Bool) -> String {
            var out = "{"
            if app {
                out += "\"app_id\":\(r.key),\"name\":"
                JSONValue.writeString(r.name ?? "", to: &out)
                out += ","
            }
            out += "\"site\":"
            JSONValue.writeString(r.site, to: &out)
            out += ",\"last_received\":{" + paths.map { "\"\($0.rawValue)\":" + time(r.last[$0]) }.joined(separator: ",") + "}"
            out += ",\"last_accepted\":{" + paths.map { "\"\($0.rawValue)\":" + time(r.accepted[$0]) }.joined(separator: ",") + "}"
            out += ",\"latest\":" + time(r.latest) + ",\"latest_accepted\":" + time(r.latestAccepted)
            out += ",\"known_since\":" + time(r.firstKnown) + ",\"silent\":\(isSilent(r))"
            if isSilent(r) {
                out += ",\"warning\":"
                JSONValue.writeString(app ? warning(app: r) : warning(site: r), to: &out)
            }
            return out + "}"
        }
        var out = "{\"now\":\"\(now.rfc3339)\",\"silence_hours\":\(Arrivals.silenceWarning / 3_600_000)"
        out += ",\"sites\":[" + sites.map { row($0, paths: Self.sitePaths, app: false) }.joined(separator: ",") + "]"
        out += ",\"apps\":[" + apps.map { row($0, paths: Self.appPaths, app: true) }.joined(separator: ",") + "]"
        out += ",\"silent\":\(sites.filter(isSilent).count + apps.filter(isSilent).count)}"
        return out
    }

    /// The same as gauges: the time of each last arrival, and 1 for each silent site or app.
    func prometheusText() -> String {
        var out = "# HELP attribution_last_received_timestamp_seconds When a served site last received something on a path.\n"
        out += "# TYPE attribution_last_received_timestamp_seconds gauge\n"
        for r in sites {
            for path in Self.sitePaths {
                if let ms = r.last[path] { out += "attribution_last_received_timestamp_seconds{site=\"\(MetricSeries.label(r.site))\",path=\"\(path.rawValue)\"} \(ms / 1000)\n" }
            }
        }
        out += "# HELP attribution_last_accepted_timestamp_seconds When a served site last accepted something on a path.\n"
        out += "# TYPE attribution_last_accepted_timestamp_seconds gauge\n"
        for r in sites {
            for path in Self.sitePaths {
                if let ms = r.accepted[path] { out += "attribution_last_accepted_timestamp_seconds{site=\"\(MetricSeries.label(r.site))\",path=\"\(path.rawValue)\"} \(ms / 1000)\n" }
            }
        }
        out += "# HELP attribution_app_last_postback_timestamp_seconds When a registered app's last postback copy arrived, by protocol.\n"
        out += "# TYPE attribution_app_last_postback_timestamp_seconds gauge\n"
        for r in apps {
            for path in Self.appPaths {
                if let ms = r.last[path] {
                    out += "attribution_app_last_postback_timestamp_seconds{app_id=\"\(r.key)\",site=\"\(MetricSeries.label(r.site))\",path=\"\(path.rawValue)\"} \(ms / 1000)\n"
                }
            }
        }
        out += "# HELP attribution_silent 1 for a served site or registered app that has accepted nothing for 48 hours.\n"
        out += "# TYPE attribution_silent gauge\n"
        for r in sites { out += "attribution_silent{kind=\"site\",site=\"\(MetricSeries.label(r.site))\"} \(isSilent(r) ? 1 : 0)\n" }
        for r in apps { out += "attribution_silent{kind=\"app\",app_id=\"\(r.key)\",site=\"\(MetricSeries.label(r.site))\"} \(isSilent(r) ? 1 : 0)\n" }
        return out
    }
}
