import AppDevelopers
import HTTPServer
import Postbacks
import Primitives

/// Each app's development path, as Apple advises: a hard-to-guess URL for Settings › Developer ›
/// Development Postbacks, whose postbacks are checked with Apple's keys (development ones
/// included), kept apart (`DevelopmentPostbacks`), never counted and never relayed.
///
/// - `POST /development-postbacks/SECRET/` (devices): a postback of either protocol, told apart by
///   its body, or by a well-known path appended to the URL (`…/SECRET/.well-known/skadnetwork/
///   report-attribution/`), as the tool's "Use Developer Postback URL" may write it. 200 once it
///   is on disk; 404 for a secret that is no app's, so that a guess learns nothing.
/// - `POST, DELETE /api/apps/development-path?app_id=` (admin): a new secret, and its URL (the
///   old one stops at once); none. The setup view shows the URL to the admin token.
/// - `POST /api/apps/development-path/samples?app_id=` (admin): Apple's published sample
///   postbacks through the app's development path, as a device would send them.
struct DevelopmentPathRoutes: SurfaceRoutes {
    let context: HandlerContext
    let paths: DevelopmentPathStore
    let apps: AppRegistryStore
    let postbacks: DevelopmentPostbacks
    let keyring: PostbackKeyring
    let maxPostbackBytes: Int
    static let intakePrefix = "/development-postbacks/"
    static let adminPath = "/api/apps/development-path"

    func routes(admin: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("development postbacks", routes: [
                // A signature check and a file replaced: a worker's, never the loop's.
                Route(.prefix(Self.intakePrefix), methods: ["POST"], workers: workers, answer: intake),
            ]),
            RouteGroup("development paths", gate: admin, routes: [
                Route(.exact(Self.adminPath), methods: ["POST"]) { request in
                    let app = try registeredApp(request)
                    var random = SystemRandomNumberGenerator()
                    let secret = DevelopmentPaths.makeSecret(using: &random)
                    let created = now.millisecondsSinceEpoch
                    do throws(RequestProblem) {
                        try paths.update { $0.set(appID: app.appID, secret: secret, at: created) }
                    } catch { throw Problem(error) }
                    return JSONResponse.make(201, Self.describe(.init(appID: app.appID, secret: secret, createdAt: created), app: app))
                },
                Route(.exact(Self.adminPath), methods: ["DELETE"]) { request in
                    let app = try registeredApp(request)
                    return try Registrations.remove(in: paths, notFound: "app \(app.appID) has no development path") { $0.remove(appID: app.appID) }
                },
                Route(.exact(Self.adminPath + "/samples"), methods: ["POST"], workers: workers) { request in
                    let app = try registeredApp(request)
                    guard paths.registry.path(appID: app.appID) != nil else {
                        throw Problem(status: 409, rule: "no_development_path", field: "app_id",
                                      detail: "app \(app.appID) has no development path: POST \(Self.adminPath)?app_id=\(app.appID) first")
                    }
                    let sent = try ApplesSamplePostbacks.all.map { sample in
                        let entry = try keep(Array(sample.body.utf8), proto: sample.proto, appID: app.appID)
                        return "{\"name\":\"\(sample.name)\",\"protocol\":\"\(sample.proto.name)\",\"signature\":\"\(entry.signature)\"}"
                    }
                    return JSONResponse.make(200, "{\"app_id\":\(app.appID),\"sent\":[" + sent.joined(separator: ",") + "]}")
                },
            ]),
        ]
    }

    /// `{"app_id":…,"path":"/development-postbacks/…/","url":"https://site/development-postbacks/…/","created_at":"…"}`
    static func describe(_ path: DevelopmentPaths.Path, app: App) -> String {
        let urlPath = DevelopmentPaths.urlPath(secret: path.secret)
        return "{\"app_id\":\(app.appID),\"path\":\"\(urlPath)\",\"url\":\"https://\(app.site)\(urlPath)\",\"created_at\":\""
            + Timestamp(millisecondsSinceEpoch: path.createdAt).rfc3339 + "\"}"
    }

    private func registeredApp(_ request: HTTPRequest) throws -> App {
        for item in request.queryItems where item.name != "app_id" {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "\(request.path) takes only ?app_id=…")
        }
        guard let text = request.queryItems.first(where: { $0.name == "app_id" })?.value else {
            throw Problem(status: 400, rule: "missing_parameter", field: "app_id", detail: "name the app: ?app_id=")
        }
        // Digits only, as registrations write the id: +42, 042 and -0 name nothing by accident.
        guard JSONValue.isIntegerLiteral(text), let id = JSONValue.integerValue(text), id > 0 else {
            throw Problem(status: 400, rule: "invalid_parameter", field: "app_id", detail: "app_id must be a positive integer; got \"\(text.prefix(30))\"")
        }
        guard let app = apps.registry.app(id: id) else {
            throw Problem(status: 404, rule: "unknown_app", field: "app_id", detail: "no app registered with app_id \(id)")
        }
        return app
    }

    func intake(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try context.servedSite(of: request, what: "the development postback")
        let rest = request.path.dropFirst(Self.intakePrefix.count)
        let secret = rest.prefix { $0 != "/" }
        let suffix = rest.dropFirst(secret.count)
        // An app removed since keeps no development path that works.
        guard DevelopmentPaths.isSecretShaped(secret), let appID = paths.registry.appID(secret: secret), apps.registry.app(id: appID) != nil else {
            throw Problem(status: 404, rule: "unknown_development_path", detail: "no app's development path is \(Self.intakePrefix)…")
        }
        var proto: AttributionProtocol?
        switch suffix {
        case "", "/": proto = nil
        case "/.well-known/skadnetwork/report-attribution", "/.well-known/skadnetwork/report-attribution/": proto = .skadnetwork
        case "/.well-known/appattribution/report-attribution", "/.well-known/appattribution/report-attribution/": proto = .adattributionkit
        default:
            throw Problem(status: 404, rule: "unknown_development_path",
                          detail: "after the secret only a postback path (/.well-known/…/report-attribution/) may follow")
        }
        guard request.body.count <= maxPostbackBytes else {
            throw Problem(status: 413, rule: "body_too_large", field: "body",
                          detail: "the body has \(request.body.count) bytes; postbacks are at most \(maxPostbackBytes)")
        }
        let read = try PostbackInspection.read(request.body)
        let entry = try keep(read.json, proto: proto ?? read.proto, appID: appID)
        return JSONResponse.make(200, "{\"stored\":true,\"development\":true,\"app_id\":\(appID),\"signature\":\"\(entry.signature)\"}")
    }

    /// Reads, checks and keeps a development postback; throws the refusal of what is no postback.
    private func keep(_ body: [UInt8], proto: AttributionProtocol, appID: Int) throws -> DevelopmentPostbacks.Entry {
        let postback: Postback
        switch PostbackReading(proto, body) {
        case .refused(let problem): throw problem
        case .postback(let read, _): postback = read
        }
        let entry = DevelopmentPostbacks.Entry(receivedAt: now.millisecondsSinceEpoch, path: "development", proto: proto.name,
                                               body: String(decoding: body, as: UTF8.self), signature: keyring.check(postback).outcome.name)
        do {
            try postbacks.record(appID: appID, entry)
        } catch {
            // The reason (a path in DATA) is the operator's: logged, not answered.
            EventLog.write("development_postback_not_kept", ["app_id": .number(String(appID)), "error": .string("\(error)")])
            throw Problem(status: 503, rule: "development_postbacks_unavailable", detail: "the postback could not be kept; send it again later")
        }
        return entry
    }
}

/// The development paths, in `DATA/development-paths.json`.
typealias DevelopmentPathStore = RegistryStore<DevelopmentPaths>

extension RegistryStore where Contents == DevelopmentPaths {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/development-paths.json", empty: DevelopmentPaths(), what: "the development paths", siteRules: siteRules)
    }
}
