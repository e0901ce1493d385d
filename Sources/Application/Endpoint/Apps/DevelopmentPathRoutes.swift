import AppDevelopers
import Dispatch
import HTTPServer
import Locking
import Postbacks
import Primitives
import RecordLog

/// Each app's development path, as Apple advises: a hard-to-guess URL for Settings › Developer ›
/// Development Postbacks, whose postbacks are checked with Apple's keys (development ones
/// included), kept apart (`development_postback` records in the log, and the setup view's
/// `DevelopmentPostbacks`), never counted, and relayed only to a destination that asks for
/// development postbacks.
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
    let store: RecordLog
    /// Asks the loop for a turn: a record queued off the loop is committed in one.
    let turns: TurnRequester
    let maxPostbackBytes: Int
    static let intakePrefix = "/development-postbacks/"
    static let adminPath = "/api/apps/development-path"

    func routes(admin: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("development postbacks", routes: [
                // A signature check and a file replaced: a worker's, never the loop's.
                Route(.prefix(Self.intakePrefix), methods: ["POST"], workers: workers, handler: intake),
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
                    // One after another, each on disk before the next: a worker's thread waits, not the loop.
                    let sent = try ApplesSamplePostbacks.all.map { sample in
                        let done = DispatchSemaphore(value: 0)
                        let outcome = Locked<Result<DevelopmentPostbacks.Entry, Problem>?>(nil)
                        try keep(Array(sample.body.utf8), proto: sample.proto, app: app) { result in
                            outcome.withLock { $0 = result }
                            done.signal()
                        }
                        done.wait()
                        let entry = try outcome.withLock { $0 }!.get()
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
        let id = try RequestedAppID.required(request)
        guard let app = apps.registry.app(id: id) else {
            throw Problem(status: 404, rule: "unknown_app", field: "app_id", detail: "no app registered with app_id \(id)")
        }
        return app
    }

    func intake(_ request: HTTPRequest, responder: HTTPResponder) throws {
        _ = try context.servedSite(of: request, what: "the development postback")
        let rest = request.path.dropFirst(Self.intakePrefix.count)
        let secret = rest.prefix { $0 != "/" }
        let suffix = rest.dropFirst(secret.count)
        // An app removed since keeps no development path that works.
        guard DevelopmentPaths.isSecretShaped(secret), let appID = paths.registry.appID(secret: secret), let app = apps.registry.app(id: appID) else {
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
        // The device is answered once the record is on disk: 200, or 503 and it sends it again.
        try keep(read.json, proto: proto ?? read.proto, app: app, contentType: request.headers["Content-Type"]) { result in
            switch result {
            case .success(let entry):
                responder.respond(JSONResponse.make(200, "{\"stored\":true,\"development\":true,\"app_id\":\(appID),\"signature\":\"\(entry.signature)\"}"))
            case .failure(let problem):
                responder.respond(problem.response)
            }
        }
    }

    /// Reads and checks a development postback, throwing the refusal of what is no postback; then
    /// writes its record and tells `done` once it is on disk (or cannot be).
    private func keep(_ body: [UInt8], proto: AttributionProtocol, app: App, contentType: String? = nil,
                      done: @escaping @Sendable (Result<DevelopmentPostbacks.Entry, Problem>) -> Void) throws {
        let postback: Postback, contentHash: UInt64
        switch PostbackReading(proto, body) {
        case .refused(let problem): throw problem
        case .postback(let read, let hash): (postback, contentHash) = (read, hash)
        }
        let check = keyring.check(postback)
        let draft = StoredPostback.Draft(protocol: proto, site: app.site, verdict: .quarantined, reasons: ["development_path"] + postback.reasons,
                                         signature: check.outcome, keyName: check.keyName, duplicateKey: postback.duplicateKey,
                                         contentHash: contentHash, body: body, contentType: contentType)
        let (postbacks, appID) = (self.postbacks, app.appID)
        let queued = store.appendDevelopmentPostback(appID: appID, draft) { result in
            switch result {
            case .success(let written):
                let entry = DevelopmentPostbacks.Entry(receivedAt: written.at.millisecondsSinceEpoch, path: "development", proto: proto.name,
                                                       body: String(decoding: body, as: UTF8.self), signature: check.outcome.name)
                postbacks.remember(appID: appID, entry)
                done(.success(entry))
            case .failure(let error):
                EventLog.write("development_postback_not_kept", ["app_id": .number(String(appID)), "error": .string("\(error)")])
                done(.failure(Problem(status: 503, rule: "development_postbacks_unavailable", detail: "the postback could not be kept; send it again later")))
            }
        }
        guard queued != nil else {
            throw Problem(status: 503, rule: "development_postbacks_unavailable", detail: "the endpoint is stopping; send the postback again later")
        }
        turns.request()
    }
}

/// The development paths, in `DATA/development-paths.json`.
typealias DevelopmentPathStore = RegistryStore<DevelopmentPaths>

extension RegistryStore where Contents == DevelopmentPaths {
    convenience init(dataDirectory: String, siteRules: SiteRules) throws {
        try self.init(path: dataDirectory + "/development-paths.json", empty: DevelopmentPaths(), what: "the development paths", siteRules: siteRules)
    }
}
