import Testing
@testable import HTTPServer

/// The router, served by a real server and asked in process, as the endpoint's tests ask it.
private struct Routed: HTTPHandler {
    let router: Router
    func handle(_ request: HTTPRequest, responder: HTTPResponder) { router.route(request, responder: responder) }
}

@Suite struct RouterTests {
    /// One server for the suite: started on first use, on port 0.
    static let server: HTTPServer = {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.accessLog = nil
        let server = HTTPServer(configuration: configuration, handler: Routed(router: RouterTests().router()))
        _ = try? server.start()
        return server
    }()

    struct Refusal: Error { var status: Int }

    private func router() -> Router {
        let refuse: RouteGroup.Gate = { request in
            if request.headers["Authorization"] != "yes" { throw Refusal(status: 401) }
        }
        return Router([
            RouteGroup("open", routes: [
                Route(.exact("/a"), methods: ["GET", "HEAD"]) { _ in .text(200, "a get") },
                Route(.exact("/a"), methods: ["POST"]) { _ in .text(201, "a post") },
                Route(.prefix("/files/"), methods: ["GET"]) { request in .text(200, "file \(request.path)") },
                Route(.exact("/throws"), methods: ["GET"]) { _ in throw Refusal(status: 422) },
                Route(.exact("/throws-later"), methods: ["POST"]) { _, responder in
                    // What a handler throws is the answer, whatever it would have said after.
                    throw Refusal(status: 409)
                },
            ]),
            RouteGroup("guarded", gate: refuse, routes: [
                Route(.exact("/secret"), methods: ["GET"]) { _ in .text(200, "secret") },
            ]),
        ], methodNotAllowed: { request, allow in .text(405, "\(request.method) not in \(allow)") },
           refused: { request, error in .text((error as? Refusal)?.status ?? 500, "refused \(request.path)") },
           fallback: { request, responder in
               if request.path == "/fallback-throws" { throw Refusal(status: 410) }
               responder.respond(.text(404, "no \(request.path)"))
           })
    }

    private func answer(_ method: String, _ target: String, token: Bool = false) -> (Int, String, String?) {
        var headers = HTTPHeaders()
        if token { headers.add(name: "Authorization", value: "yes") }
        let response = Self.server.respond(to: HTTPRequest(method: method, target: target, headers: headers))!
        guard case .bytes(let body) = response.body else { return (response.status, "", nil) }
        return (response.status, String(decoding: body, as: UTF8.self), response.headers["Allow"])
    }

    @Test func pathsAndMethodsPickTheirRoute() {
        #expect(answer("GET", "/a").0 == 200 && answer("GET", "/a").1 == "a get")
        #expect(answer("HEAD", "/a").0 == 200)
        #expect(answer("POST", "/a").1 == "a post")
        #expect(answer("GET", "/a?x=1").1 == "a get", "the query is not part of the path")
        #expect(answer("GET", "/files/x/y").1 == "file /files/x/y")
    }

    @Test func aKnownPathWithAnotherMethodIs405WithAllowFromTheTable() {
        let (status, text, allow) = answer("DELETE", "/a")
        #expect(status == 405 && allow == "GET, HEAD, POST" && text == "DELETE not in GET, HEAD, POST")
        #expect(answer("POST", "/files/x").2 == "GET")
    }

    @Test func unknownPathsGoToTheFallback() {
        #expect(answer("GET", "/b").1 == "no /b")
        #expect(answer("GET", "/files").1 == "no /files", "a prefix matches only below itself")
        #expect(answer("GET", "/a/").0 == 404)
    }

    @Test func theGateRunsBeforeTheMethodCheck() {
        #expect(answer("GET", "/secret").0 == 401)
        #expect(answer("POST", "/secret").0 == 401, "a caller without the token learns nothing of the methods")
        #expect(answer("POST", "/secret", token: true).0 == 405)
        #expect(answer("GET", "/secret", token: true).1 == "secret")
    }

    @Test func whatAHandlerAGateOrTheFallbackThrowsIsAnsweredByRefused() {
        #expect(answer("GET", "/throws").0 == 422)
        #expect(answer("GET", "/throws").1 == "refused /throws")
        #expect(answer("POST", "/throws-later").0 == 409)
        #expect(answer("GET", "/fallback-throws").0 == 410)
        #expect(answer("GET", "/secret").1 == "refused /secret")
    }

    @Test func theTableListsEveryPathWithItsMethodsAndGate() {
        let table = router().table
        #expect(table.count == 5)
        #expect(table.first { $0.path == .exact("/a") }?.methods == ["GET", "HEAD", "POST"])
        #expect(table.first { $0.path == .exact("/secret") }?.gated == true)
        #expect(table.first { $0.path == .prefix("/files/") }?.gated == false)
    }
}
