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
/// - `POST /api/relays/pause?name=…` and `/api/relays/resume?name=…`.
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
        var retrying: Bool
        var paused: Bool
        var lagSeconds: Double
        var lastError: String?
        var lastErrorAt: String?
        var lastStatus: Int?
        var refusals: [Refusal]

        struct Refusal: Encodable {
            var record: UInt64
            var status: Int
            var at: String
            var body: String
        }

        private enum CodingKeys: String, CodingKey {
            case destination, delivered, refused, retrying, paused, lagSeconds = "lag_seconds", lastError = "last_error",
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
                    try change(request) { service.pause($0) }
                },
                Route(.exact("/api/relays/resume"), methods: ["POST"]) { request in
                    try change(request) { service.resume($0) }
                },
            ]),
        ]
    }

    /// `resolved`: what the destination's name resolved to, looked up before the registry's lock.
    private func checks(resolved: [IPAddress]?) -> RelayRegistry.Context {
        RelayRegistry.Context(servedSites: context.served.sites, apps: Set(apps.registry.apps.map(\.appID)), allowHTTP: allowHTTP,
                              resolve: { _ in resolved })
    }

    private func change(_ request: HTTPRequest, _ act: (String) -> Bool) throws -> HTTPResponse {
        let name = try Self.name(request)
        guard act(name) else { throw Problem(status: 404, rule: "not_found", field: "name", detail: "no relay destination named \"\(name.prefix(64))\"") }
        return JSONResponse.make(200, JSONResponse.encode(listed().first { $0.destination.name == name }))
    }

    /// `?name=…`, and nothing else.
    static func name(_ request: HTTPRequest) throws -> String {
        for item in request.queryItems where item.name != "name" {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "takes only ?name=…")
        }
        guard let name = request.queryItems.first(where: { $0.name == "name" })?.value, !name.isEmpty else {
            throw Problem(status: 400, rule: "missing_parameter", field: "name", detail: "needs ?name=… (a relay destination's name)")
        }
        return name
    }

    func listed() -> [Listed] {
        let statuses = Dictionary(service.statuses.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return book.registry.destinations.map { destination in
            let s = statuses[destination.name]
            return Listed(destination: destination.shown, delivered: s?.delivered ?? 0, refused: s?.refused ?? 0,
                          retrying: s?.retrying ?? false, paused: service.isPaused(destination.name), lagSeconds: s?.lagSeconds ?? 0,
                          lastError: s?.lastError, lastErrorAt: s?.lastErrorAt?.rfc3339, lastStatus: s?.lastStatus,
                          refusals: (s?.refusals ?? []).map { Listed.Refusal(record: $0.recordID, status: $0.status, at: $0.at.rfc3339, body: $0.bodyStart) })
        }
    }
}
