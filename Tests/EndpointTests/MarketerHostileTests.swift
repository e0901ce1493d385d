import Foundation
import Primitives
import Testing
@testable import Endpoint

/// What a stranger (or a careless script) can put in what this issue added: `advertiser=`, the
/// exports' days, the overview's period, advertisers, viewer tokens and their labels. Every answer
/// is a documented 4xx or a 200, never a 5xx, never a trap, and nothing refused is kept.
@Suite struct MarketerHostileTests {
    static let admin = AccessTests.admin

    @Test func advertiserValuesNameNothingAndTrapNothing() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        let scoped = try AccessTests.token(endpoint, advertiser: "acme")
        let values = [String(repeating: "a", count: 10_000), "%00", "acme%00", "ACME", "acme%20", "%E2%80%AE", "..%2F..%2Fetc",
                      "-acme", "a%0Ab", "%FF%FE", "acme,news", "1e309", "-1"]
        for path in ["/api/summary", "/api/summary.csv", "/api/summary/crosstab.csv", "/api/apps/summary", "/api/apps/summary/crosstab.csv",
                     "/api/apple-ads/summary", "/api/reports", "/api/postbacks.csv", "/api/apple-ads", "/api/rejections", "/metrics",
                     "/api/arrivals", "/api/overview", "/api/advertisers", "/api/conversions", "/api/token-keys"] {
            for value in values {
                let asAdmin = endpoint.request("GET", path + "?advertiser=" + value, headers: Self.admin)
                #expect([400, 404].contains(asAdmin.status), "\(path) advertiser=\(value.prefix(20)): \(asAdmin.status)")
                let asViewer = endpoint.request("GET", path + "?advertiser=" + value, headers: AccessTests.bearer(scoped))
                #expect([400, 403].contains(asViewer.status), "\(path) advertiser=\(value.prefix(20)) (viewer): \(asViewer.status)")
            }
            // Empty names none: the token's own scope.
            #expect(endpoint.request("GET", path + "?advertiser=", headers: Self.admin).status == 200, "\(path)")
            // Given twice: refused before any path reads it.
            #expect(endpoint.request("GET", path + "?advertiser=acme&advertiser=news", headers: Self.admin).status == 400, "\(path)")
        }
    }

    @Test func theExtremesOfAPeriod() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        for path in ["/api/reports", "/api/postbacks", "/api/apple-ads.csv"] {
            #expect(try endpoint.get(path + "?from=0001-01-01&to=9999-12-31").status == 200, "\(path)")
            #expect(try endpoint.get(path + "?from=9999-12-31").status == 200, "\(path)")
            #expect(try endpoint.get(path + "?to=0001-01-01").status == 200, "\(path)")
            for bad in ["?from=", "?to=2026-02-30", "?from=+2026-01-01", "?from=2026-1-1", "?from=%00", "?to=" + String(repeating: "9", count: 5_000)] {
                #expect(try endpoint.get(path + bad).status == 400, "\(path)\(bad.prefix(30))")
            }
        }
        #expect(try endpoint.export("?from=0001-01-01&to=9999-12-31").count == 1)
        // The overview's period is the summaries': at most ten years, at the calendar's ends too.
        for (query, status) in [("?from=9999-12-20&to=9999-12-31", 200), ("?from=0001-01-01&to=0001-12-31", 200),
                                ("?from=1970-01-01&to=1980-01-15", 400), ("?from=2026-11-02&to=2026-11-01", 400), ("?to=0000-01-01", 400)] {
            let response = try endpoint.get("/api/overview" + query)
            #expect(response.status == status, "\(query): \(response.bodyText.prefix(200))")
            if status == 200 { #expect((json(response)["days"] as? [String])?.count ?? 0 > 0) }
        }
    }

    @Test func aFloodOfRefusedRegistrationsKeepsNothing() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        let before = try endpoint.get("/api/advertisers").bodyText
        for i in 0..<300 {
            let body: String
            switch i % 5 {
            case 0: body = #"{"id":"x\#(i)","name":"X","sites":["shop.example"]}"#  // owned
            case 1: body = #"{"id":"x\#(i)","name":"X","sites":["s\#(i).example"]}"#  // not served
            case 2: body = #"{"id":"x\#(i)","name":"\#(String(repeating: "n", count: 101))","sites":["shop.example"]}"#
            case 3: body = #"{"id":"x\#(i)","name":"X","sites":[\#((0..<101).map { "\"s\($0).example\"" }.joined(separator: ","))]}"#
            default: body = String(repeating: "[", count: 10_000)
            }
            let response = endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: Array(body.utf8))
            #expect((400..<500).contains(response.status), "\(i): \(response.status)")
        }
        #expect(try endpoint.get("/api/advertisers").bodyText == before)
        // The same advertiser twice is one.
        #expect(endpoint.request("DELETE", "/api/advertisers?id=news", headers: Self.admin).status == 204)
        let news = Array(#"{"id":"news","name":"News Daily","sites":["news.example"]}"#.utf8)
        #expect(endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: news).status == 201)
        #expect(endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: news).status == 409)
    }

    @Test func aFloodOfMadeUpViewerTokensIsAll401() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        let real = try AccessTests.token(endpoint, advertiser: "acme")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let id = Hex.text((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let secret = Hex.text((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
            #expect(endpoint.request("GET", "/api/whoami", headers: AccessTests.bearer("vt_\(id)_\(secret)")).status == 401)
        }
        #expect(endpoint.request("GET", "/api/whoami", headers: AccessTests.bearer(real)).status == 200)
    }

    @Test func theCommandRefusesBadLabelsAndArguments() throws {
        let directory = temporaryDirectory()
        for label in ["", String(repeating: "l", count: 101), "a\u{7}b", "line\nbreak"] {
            let made = try runEndpoint(["viewer-token", "add", "--label", label, "--data", directory])
            #expect(made.status == 2 && made.output.contains("label"), "\(label.prefix(10)): \(made.output)")
        }
        #expect(try runEndpoint(["viewer-token", "add", "--label", String(repeating: "é", count: 50), "--data", directory]).status == 0)
        for arguments in [["viewer-token"], ["viewer-token", "grant"], ["viewer-token", "add", "--data", directory],
                          ["viewer-token", "add", "--label"], ["viewer-token", "revoke", "--data", directory],
                          ["viewer-token", "list", "--bogus"], ["viewer-token", "add", "--label", "x", "--advertiser", "Not An Id", "--data", directory]] {
            #expect(try runEndpoint(arguments).status == 2, "\(arguments)")
        }
        let listed = try runEndpoint(["viewer-token", "list", "--data", directory])
        #expect(listed.status == 0 && listed.output.split(separator: "\n").filter { !$0.hasPrefix("{") }.count == 1)
    }
}
