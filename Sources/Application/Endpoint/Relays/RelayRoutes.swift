import AppDevelopers
import HTTPServer
import Primitives
import Relaying
import Relays

/// The relays' API. Changes take the admin token; a viewer token reads the destinations of the
/// sites it reads (an app's destination by its app's site), never a secret:
/// - `GET /api/relays`: the destinations, each secret replaced by whether there is one, with how
///   its delivery stands;
/// - `POST /api/relays`: registers one (`RelayDestinationInput`, checked by `RelayRegistry`);
///   its delivery starts from the beginning of the log;
/// - `DELETE /api/relays?name=…`: removes one, and stops its delivery (its cursor stays, so
///   registering it again for the same URL goes on where it was);
/// - `POST /api/relays/pause?name=…` and `/api/relays/resume?name=…` (which also brings back a
///   destination marked dead), kept across restarts;
/// - `POST /api/relays/replay?name=…&from=…&to=…` (or `since` and `until`): sends a period again,
///   each copy with its first delivery id; `DELETE /api/relays/replay?name=…` ends it.
struct RelayRoutes: SurfaceRoutes {
    let context: HandlerContext
    let book: RelayRegistryStore
    let apps: AppRegistryStore
    let service: RelayService
    let allowHTTP: Bool

    struct Listed: Encodable {
        var destination: RelayDestination.Shown
        var delivered: Int
        var refused: Int
        /// `delivering`, `retrying`, `failing` (for an hour or more), `dead` or `paused`.
        var state: String
        var retrying: Bool
        var paused: Bool
        var failingSince: String?
        var deadSince: String?
        var replay: Replay?
        /// For a destination failing or dead: what is wrong and what to do, as the page shows it.
        var warning: String?
        var lagSeconds: Double
        var lastError: String?
        var lastErrorAt: String?
        var lastStatus: Int?
        var refusals: [Refusal]

        struct Replay: Encodable {
            var since: String
            var until: String
            var askedAt: String
            /// How far the walk over the log has got, from 0 to 1, and the copies sent again so far.
            var progress: Double
            var sent: Int

            private enum CodingKeys: String, CodingKey {
                case since, until, askedAt = "asked_at", progress, sent
            }
        }

        struct Refusal: Encodable {
            var record: UInt64
            var status: Int
            var at: String
            var body: String
        }

        private enum CodingKeys: String, CodingKey {
            case destination, delivered, refused, state, retrying, paused, failingSince = "failing_since", deadSince = "dead_since",
                 replay, warning, lagSeconds = "lag_seconds", lastError = "last_error",
                 lastErrorAt = "last_error_at", lastStatus = "last_status", refusals
        }
    }

    func routes(bearer: @escaping RouteGroup.Gate, registrationGate: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("relays", gate: registrationGate, routes: [
                Route(.exact("/api/relays"), methods: ["GET", "HEAD"]) { request in
                    let readable = try scope(request)
                    let siteOfApp = Dictionary(apps.registry.apps.map { ($0.appID, $0.site) }, uniquingKeysWith: { first, _ in first })
                    let shown = listed().filter { listed in
                        guard let site = listed.destination.site ?? listed.destination.appID.flatMap({ siteOfApp[$0] }) else {
                            return readable.isEverything
                        }
                        return readable.allows(site)
                    }
                    return JSONResponse.make(200, JSONResponse.encode(["destinations": shown]))
                },
                // On a worker thread: the destination's name is resolved first, which can take a
                // resolver's whole time-out, and outside the registry's lock.
                Route(.exact("/api/relays"), methods: ["POST"], workers: workers) { request in
                    let asked = try RelayDestinationInput.destination(from: try JSONParser().parseBody(request.body))
                    let host = (try? RelayURL.parse(asked.url, allowHTTP: true, allowInternal: true))?.host
                    let resolved = host.flatMap { IPAddress($0) == nil ? HostResolver.addresses(of: $0) : nil }
                    let response = try Registrations.register(request, in: book) { json, registry throws(RequestProblem) in
                        let destination = try RelayDestinationInput.destination(from: json)
                        try registry.add(destination, in: checks(resolved: resolved))
                        return JSONResponse.encode(registry.destination(named: destination.name)?.shown)
                    }
                    service.sync()
                    return response
                },
                Route(.exact("/api/relays"), methods: ["DELETE"]) { request in
                    let name = try Self.name(request)
                    let response = try Registrations.remove(in: book, notFound: "no relay destination named \"\(name.prefix(64))\"") {
                        $0.remove(name: name)
                    }
                    service.sync()
                    return response
                },
            ]),
            // Pausing changes no registration: a node of a cluster pauses its own delivery.
            RouteGroup("relay delivery", gate: bearer, routes: [
                Route(.exact("/api/relays/pause"), methods: ["POST"]) { request in
                    try change(request, .pause)
                },
                Route(.exact("/api/relays/resume"), methods: ["POST"]) { request in
                    try change(request, .resume)
                },
                Route(.exact("/api/relays/replay"), methods: ["POST"]) { request in
                    let name = try Self.name(request, alsoTaking: ["from", "to", "since", "until"])
                    let (since, until) = try RequestedPeriod.parse(request, alsoTaking: ["name"])
                    guard let since else {
                        throw Problem(status: 400, rule: "missing_parameter", field: "from", detail: "needs the period's start: from=YYYY-MM-DD or since=…")
                    }
                    let end = until ?? context.clock()
                    guard since < end else {
                        throw Problem(status: 400, rule: "invalid_period", field: "until", detail: "the period must end after it begins")
                    }
                    return try change(name, .replay(since: since, until: end))
                },
                Route(.exact("/api/relays/replay"), methods: ["DELETE"]) { request in
                    try change(request, .cancelReplay)
                },
            ]),
        ]
    }

    /// `resolved`: what the destination's name resolved to, looked up before the registry's lock.
    private func checks(resolved: [IPAddress]?) -> RelayRegistry.Context {
        RelayRegistry.Context(servedSites: context.served.sites, apps: Set(apps.registry.apps.map(\.appID)), allowHTTP: allowHTTP,
                              resolve: { _ in resolved })
    }

    private func change(_ request: HTTPRequest, _ change: RelayService.Change) throws -> HTTPResponse {
        try self.change(try Self.name(request), change)
    }

    private func change(_ name: String, _ change: RelayService.Change) throws -> HTTPResponse {
        try service.change(name, change)
        return JSONResponse.make(200, JSONResponse.encode(listed().first { $0.destination.name == name }))
    }

    /// `?name=…`, and nothing else but `others`.
    static func name(_ request: HTTPRequest, alsoTaking others: Set<String> = []) throws -> String {
        for item in request.queryItems where item.name != "name" && !others.contains(item.name) {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "takes only ?name=…")
        }
        guard let name = request.queryItems.first(where: { $0.name == "name" })?.value, !name.isEmpty else {
            throw Problem(status: 400, rule: "missing_parameter", field: "name", detail: "needs ?name=… (a relay destination's name)")
        }
        return name
    }

    func listed() -> [Listed] {
        let statuses = Dictionary(service.statuses.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let now = context.clock()
        return book.registry.destinations.map { destination in
            var s = statuses[destination.name] ?? RelayDelivery.Status(name: destination.name, url: destination.url)
            if service.isPausedBeforeStart(destination.name) { s.paused = true }
            let state = RelayState.of(paused: s.paused, deadSince: s.deadSince, failingSince: s.failingSince, retrying: s.retrying, now: now)
            return Listed(destination: destination.shown, delivered: s.delivered, refused: s.refused,
                          state: state.rawValue, retrying: s.retrying, paused: s.paused,
                          failingSince: s.failingSince?.rfc3339, deadSince: s.deadSince?.rfc3339,
                          replay: s.replay.map {
                              Listed.Replay(since: $0.since.rfc3339, until: $0.until.rfc3339, askedAt: $0.askedAt.rfc3339,
                                            progress: $0.progress, sent: $0.sent)
                          },
                          warning: Self.warning(state, s),
                          lagSeconds: s.lagSeconds, lastError: s.lastError, lastErrorAt: s.lastErrorAt?.rfc3339, lastStatus: s.lastStatus,
                          refusals: s.refusals.map { Listed.Refusal(record: $0.recordID, status: $0.status, at: $0.at.rfc3339, body: $0.bodyStart) })
        }
    }

    /// What the page and the API say of a destination that needs an admin.
    static func warning(_ state: RelayState, _ s: RelayDelivery.Status) -> String? {
        let error = s.lastError.map { " The last error: \($0)" + (s.lastErrorAt.map { " at \($0.rfc3339)" } ?? "") + "." } ?? ""
        switch state {
        case .failing:
            return "Relay destination \(s.name) (\(s.url)) has taken no copy since \(s.failingSince?.rfc3339 ?? "?")." + error
                + " Its copies wait in the log and go, in order, as soon as it answers; if it keeps failing it is marked dead and no longer tried."
        case .dead:
            return "Relay destination \(s.name) (\(s.url)) is marked dead since \(s.deadSince?.rfc3339 ?? "?"), after failing since \(s.failingSince?.rfc3339 ?? "?")."
                + error + " Nothing is sent to it until an admin resumes it (POST /api/relays/resume?name=\(s.name)); it then goes on from where it stopped, as long as the log keeps the copies."
        default:
            return nil
        }
    }
}
