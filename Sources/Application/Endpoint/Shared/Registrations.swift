import HTTPServer
import Primitives

/// What keeps a registry for the admin API: the site owners' book and the app developers'.
protocol RegistryKeeper: Sendable {
    associatedtype Contents
    /// Applies `change` to a copy and saves it; nothing changes if either fails.
    func update(_ change: (inout Contents) throws(RequestProblem) -> Void) throws(RequestProblem)
}

/// The admin API's registration answers, the same for every registry: POST reads JSON and
/// answers 201 with what was registered, DELETE answers 204 or 404, refusals are problem+json.
enum Registrations {
    static func register<Keeper: RegistryKeeper>(_ request: HTTPRequest, in keeper: Keeper,
                                                 _ add: (JSONValue, inout Keeper.Contents) throws(RequestProblem) -> String) throws(RequestProblem) -> HTTPResponse {
        var created = ""
        let parsed = try JSONParser().parseBody(request.body)
        try keeper.update { (registry) throws(RequestProblem) in created = try add(parsed, &registry) }
        return JSONResponse.make(201, created)
    }

    /// A registration for a site this endpoint does not serve would never see a report, a
    /// trigger or a postback: refused, naming the field. A development server without `--site`
    /// serves any name.
    static func requireServed(_ site: String, field: String, servedSites: Set<String>) throws(RequestProblem) {
        guard !servedSites.isEmpty, !servedSites.contains(site) else { return }
        throw .invalid(field, "site_not_served",
                       "names \(site), which this endpoint does not serve (it serves \(servedSites.sorted().joined(separator: ", ")))")
    }

    /// `change` says whether it found what to remove; `notFound` is the 404's detail.
    static func remove<Keeper: RegistryKeeper>(in keeper: Keeper, notFound: String,
                                               _ change: (inout Keeper.Contents) -> Bool) throws -> HTTPResponse {
        var found = false
        try keeper.update { (registry) throws(RequestProblem) in found = change(&registry) }
        guard found else { throw Problem(status: 404, rule: "not_found", detail: notFound) }
        return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"], body: [])
    }
}
