import AppConfiguration
import HTTPServer

/// `POST /api/plist-check` (token): the body is an Info.plist, XML or binary, as the page's form
/// or `curl --data-binary @Info.plist` sends it; the answer is `check-plist --json` against the
/// sites this endpoint serves. A plist with errors is still a 200: the check worked.
struct PlistCheckRoutes: SurfaceRoutes {
    let context: HandlerContext
    static let path = "/api/plist-check"


    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("plist check", gate: bearer, routes: [
                // A parse of up to the server's body limit: milliseconds of a property list's
                // parser, not the loop's to spend.
                Route(.exact(Self.path), methods: ["POST"], workers: workers, answer: check),
            ]),
        ]
    }

    func check(_ request: HTTPRequest) throws -> HTTPResponse {
        guard !request.body.isEmpty else {
            throw Problem(status: 400, rule: "empty_body", field: "body", detail: "send the Info.plist file as the body (XML or binary)")
        }
        let sites = try scope(request).sites.map { $0.intersection(context.served.sites) } ?? context.served.sites
        do throws(PropertyList.NotAPropertyList) {
            return JSONResponse.make(200, try InfoPlistCheck(servedSites: sites).check(bytes: request.body).json)
        } catch {
            throw Problem(status: 422, rule: "not_a_property_list", field: "body", detail: "the body \(error.detail)")
        }
    }
}
