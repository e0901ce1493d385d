import Testing
@testable import HTTPServer

@Suite struct RouterTests {
    private func router(gateOpen: Bool = false) -> Router {
        let refuse: @Sendable (HTTPRequest) -> HTTPResponse? = { request in
            request.headers["Authorization"] == "yes" ? nil : HTTPResponse.text(401, "token")
        }
        return Router([
            RouteGroup("open", routes: [
                Route(.exact("/a"), methods: ["GET", "HEAD"]) { _ in .text(200, "a get") },
                Route(.exact("/a"), methods: ["POST"]) { _ in .text(201, "a post") },
                Route(.prefix("/files/"), methods: ["GET"]) { request in .text(200, "file \(request.path)") },
            ]),
            RouteGroup("guarded", gate: refuse, routes: [
                Route(.exact("/secret"), methods: ["GET"]) { _ in .text(200, "secret") },
            ]),
        ], methodNotAllowed: { request, allow in .text(405, "\(request.method) not in \(allow)") },
           fallback: { request, responder in responder.respond(.text(404, "no \(request.path)")) })
    }

    private func answer(_ method: String, _ target: String, token: Bool = false) -> (Int, String, String?) {
        var headers = HTTPHeaders()
        if token { headers.add(name: "Authorization", value: "yes") }
        let response = router().respond(to: HTTPRequest(method: method, target: target, headers: headers))!
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
}
