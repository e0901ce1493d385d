import Testing
@testable import HTTPServer

/// Headers are kept as bytes; what a handler reads from them must not depend on that.
@Suite struct HTTPHeadersTests {
    private func parsedHeaders(_ lines: String) throws -> HTTPHeaders {
        var parser = HTTPRequestParser()
        let bytes = Array("GET / HTTP/1.1\r\n\(lines)\r\n\r\n".utf8)
        var start = 0
        guard case .request(let request) = try parser.next(bytes, start: &start) else {
            Issue.record("no request")
            return HTTPHeaders()
        }
        return request.headers
    }

    @Test func namesMatchInAnyCaseAndValuesKeepTheirOrder() throws {
        let headers = try parsedHeaders("Host: shop.example\r\nX-Tag:  one \r\ncontent-TYPE: Application/JSON\r\nx-tag: two")
        #expect(headers["content-type"] == "Application/JSON")
        #expect(headers["X-TAG"] == "one")
        #expect(headers.values("x-Tag") == ["one", "two"])
        #expect(headers.count == 4)
        #expect(headers.fields.map(\.name) == ["Host", "X-Tag", "content-TYPE", "x-tag"])
        #expect(headers["Accept"] == nil)
        #expect(headers.withFirstValue("Host") { $0.count } == 12)
        #expect(headers.withFirstValue("Accept") { $0.count } == nil)
    }

    @Test func listTokensAreFoundInsideListsAndAcrossFields() throws {
        let headers = try parsedHeaders("Host: a\r\nConnection: Upgrade ,\tKeep-Alive\r\nConnection: TE")
        #expect(headers.listContains("connection", token: "keep-alive"))
        #expect(headers.listContains("Connection", token: "te"))
        #expect(headers.listContains("Connection", token: "upgrade"))
        #expect(!headers.listContains("Connection", token: "close"))
        #expect(!headers.listContains("Connection", token: "keep"))
        #expect(!headers.listContains("Host", token: "b"))
    }

    @Test func removeAndReplaceKeepTheOtherFields() {
        var headers: HTTPHeaders = ["Allow": "GET", "Content-Type": "text/plain"]
        headers.add(name: "allow", value: "POST")
        headers.replace(name: "ALLOW", value: "GET, POST")
        #expect(headers.fields.map(\.name) == ["Content-Type", "ALLOW"])
        #expect(headers["Allow"] == "GET, POST")
        headers.remove(name: "content-type")
        headers.remove(name: "Missing")
        #expect(headers.fields.map(\.value) == ["GET, POST"])
    }

    @Test func nonASCIIValuesSurviveAsUTF8() {
        var headers = HTTPHeaders()
        headers.add(name: "X-Site", value: "bücher.example")
        #expect(headers["x-site"] == "bücher.example")
        #expect(!headers.contains("X-Sit"))
    }
}
