import AppDevelopers
import HTTPServer
import Postbacks
import Primitives
import RecordLog

/// `GET /api/apps/setup?app_id=` (token): "did my setup work?", per app, for the page's setup
/// view, which asks again every few seconds while someone waits for a postback.
/// - what the Info.plist must name (the page checks a file against it);
/// - when each protocol's last production copy arrived, and was accepted;
/// - the development path (its URL for the admin token only: it is a secret);
/// - the last development postback, from the development path or a production one, checked
///   again and decoded against the app's schema (`PostbackInspection`);
/// - when the app's site last had Apple's Developer Mode answer for an Apple Ads token;
/// - what to do next.
/// Without `app_id`, every app the token may read.
struct SetupRoutes: SurfaceRoutes {
    let context: HandlerContext
    let access: AccessControl
    let apps: AppRegistryStore
    let paths: DevelopmentPathStore
    let development: DevelopmentPostbacks
    let appleAds: AppleAdsOutbox
    let keyring: PostbackKeyring
    let ledger: PostbackLedger
    let store: RecordLog
    let developmentMode: Bool
    static let path = "/api/apps/setup"

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("setup", gate: bearer, routes: [
                // A signature checked again per app: a worker's.
                Route(.exact(Self.path), methods: ["GET", "HEAD"], workers: workers, answer: setup),
            ]),
        ]
    }

    func setup(_ request: HTTPRequest) throws -> HTTPResponse {
        let readable = try scope(request)
        let isAdmin = (try? access.caller(request)).map { if case .admin = $0 { true } else { false } } ?? false
        var shown = apps.registry.apps.filter { readable.allows($0.site) }
        if let id = try RequestedAppID.parse(request, alsoTaking: ["advertiser"]) {
            shown = shown.filter { $0.appID == id }
            guard !shown.isEmpty else { throw Problem(status: 404, rule: "unknown_app", field: "app_id", detail: "no app registered with app_id \(id) that this token may read") }
        }
        // What a postback names is read through the registry this token may see: another
        // advertiser's app, schema or campaigns are not named, and the ledger is the admin's.
        let registry = apps.registry.scoped(to: readable.sites)
        let book = context.arrivals?.book
        let rows = shown.map { app in
            describe(app, registry: registry, times: book?.apps[String(app.appID)], isAdmin: isAdmin)
        }
        var out = "{\"apps\":[" + rows.joined(separator: ",") + "]"
        // Xcode builds send item id 0: which app they are is anyone's guess, so they are shown apart.
        if let xcode = development.list(appID: 0).last, readable.isEverything {
            out += ",\"xcode_builds\":" + entryJSON(xcode, registry: registry, isAdmin: isAdmin)
        } else {
            out += ",\"xcode_builds\":null"
        }
        return JSONResponse.make(200, out + "}")
    }

    private func describe(_ app: App, registry: AppRegistry, times: Arrivals.Times?, isAdmin: Bool) -> String {
        var members: [JSONMember] = []
        func add(_ key: String, _ value: JSONValue) { members.append(JSONMember(key: key, value: value)) }
        func time(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp(millisecondsSinceEpoch: $0).rfc3339) } ?? .null }
        add("app_id", .number(String(app.appID)))
        add("name", .string(app.name))
        add("site", .string(app.site))
        add("info_plist", .object([
            JSONMember(key: "NSAdvertisingAttributionReportEndpoint", value: .string("https://\(app.site)")),
            JSONMember(key: "AttributionCopyEndpoint", value: .string("https://\(app.site)")),
        ]))
        var production: [JSONMember] = []
        for path in [Arrivals.Path.skadnetwork, .adattributionkit] {
            production.append(JSONMember(key: path.rawValue, value: .object([
                JSONMember(key: "last_accepted", value: time(times?.accepted[path.rawValue])),
            ])))
        }
        add("production", .object(production))
        let path = paths.registry.path(appID: app.appID)
        add("development_path", .object([
            JSONMember(key: "enabled", value: .bool(path != nil)),
            JSONMember(key: "url", value: isAdmin ? path.map { .string("https://\(app.site)" + DevelopmentPaths.urlPath(secret: $0.secret)) } ?? .null : .null),
            JSONMember(key: "created_at", value: time(path?.createdAt)),
        ]))
        let entries = development.list(appID: app.appID)
        let last = entries.last
        add("development_postbacks", .object([
            JSONMember(key: "kept", value: .number(String(entries.count))),
            JSONMember(key: "last", value: last.flatMap { try? JSONParser().parse(Array(entryJSON($0, registry: registry, isAdmin: isAdmin).utf8)) } ?? .null),
        ]))
        let test = appleAds.lastTestAnswer(site: app.site)
        add("apple_ads_test_answer", .object([JSONMember(key: "last_at", value: time(test?.millisecondsSinceEpoch))]))
        add("next_steps", .array(nextSteps(app, times: times, path: path, last: last, test: test).map { .string($0) }))
        return JSONValue.object(members).serialized()
    }

    /// `{"received_at":…,"path":"development","protocol":…,"inspection":{…}}`: the entry checked again now.
    private func entryJSON(_ entry: DevelopmentPostbacks.Entry, registry: AppRegistry, isAdmin: Bool) -> String {
        var out = "{\"received_at\":\"\(Timestamp(millisecondsSinceEpoch: entry.receivedAt).rfc3339)\",\"path\":"
        JSONValue.writeString(entry.path, to: &out)
        out += ",\"protocol\":"
        JSONValue.writeString(entry.proto, to: &out)
        out += ",\"inspection\":"
        if let inspection = try? PostbackInspection.inspect(Array(entry.body.utf8), keyring: keyring, ledger: ledger,
                                                            developmentMode: developmentMode, lookUpOnDisk: { _ in [] }) {
            out += inspection.json(registry, showsLedger: isAdmin)
        } else {
            out += "null"
        }
        return out + "}"
    }

    private func nextSteps(_ app: App, times: Arrivals.Times?, path: DevelopmentPaths.Path?, last: DevelopmentPostbacks.Entry?,
                           test: Timestamp?) -> [String] {
        var steps: [String] = []
        let accepted = [Arrivals.Path.skadnetwork, .adattributionkit].compactMap { times?.accepted[$0.rawValue] }
        if accepted.isEmpty {
            steps.append("Name https://\(app.site) in the app's Info.plist as NSAdvertisingAttributionReportEndpoint (SKAdNetwork) and AttributionCopyEndpoint (AdAttributionKit), and check the file with the Info.plist check.")
        }
        if path == nil {
            steps.append("Make a development URL for this app (admin: POST /api/apps/development-path?app_id=\(app.appID)) and give it to Settings › Developer › Ad Attribution Testing › Development Postbacks on a test device.")
        } else if last == nil {
            steps.append("On a device in Developer Mode, open Settings › Developer › Development Postbacks, enter the app's bundle identifier and the development URL, and tap Transmit Development Postbacks. This view refreshes by itself.")
        }
        if let last {
            switch last.signature {
            case SignatureOutcome.invalid.name:
                steps.append("The last development postback did not verify: compare it with a pasted copy of what your partner received (Paste and verify).")
            case SignatureOutcome.apple.name, SignatureOutcome.appleDevelopment.name, SignatureOutcome.testKey.name:
                steps.append("Development postbacks arrive and verify. Next, an end-to-end test in Developer Mode: windows of 3 minutes, each postback sent 5 to 10 minutes later.")
            default: break
            }
        }
        if test == nil {
            steps.append("For Apple Ads: run the app in Developer Mode and post AAAttribution.attributionToken() to https://\(app.site)/apple-ads/attribution; Apple answers with its test payload, shown here.")
        }
        return steps
    }
}
