import Foundation
import PCM
import Primitives
import Testing
import RawHTTPClient
@testable import Endpoint

/// The endpoint's route table, in process: every path, the methods it takes, and the token.
@Suite struct RouteTableTests {
    /// Each path with the methods it answers and whether the token is needed (`/admin/clock`
    /// exists only with the manual clock, which this endpoint has).
    static let table: [(path: String, allow: String, token: Bool)] = [
        ("/.well-known/private-click-measurement/report-attribution/", "POST", false),
        ("/.well-known/private-click-measurement/report-attribution", "POST", false),
        ("/.well-known/private-click-measurement/trigger-attribution/05", "GET, HEAD", false),
        ("/.well-known/private-click-measurement/get-token-public-key/", "GET, HEAD", false),
        ("/.well-known/private-click-measurement/get-token-public-key", "GET, HEAD", false),
        ("/.well-known/private-click-measurement/sign-unlinkable-token/", "POST", false),
        ("/.well-known/private-click-measurement/sign-unlinkable-token", "POST", false),
        ("/.well-known/skadnetwork/report-attribution/", "POST", false),
        ("/.well-known/skadnetwork/report-attribution", "POST", false),
        ("/.well-known/appattribution/report-attribution/", "POST", false),
        ("/.well-known/appattribution/report-attribution", "POST", false),
        ("/conversion-pixel", "GET, HEAD", false),
        ("/conversion-value", "POST", false),
        ("/apple-ads/attribution", "POST", false),
        ("/apple-ads/attribution/0123", "GET, HEAD", false),
        ("/api/conversions", "GET, HEAD, POST, DELETE", true),
        ("/api/campaigns", "GET, HEAD, POST, DELETE, PUT", true),
        ("/api/conversions/pixel-test", "GET, HEAD", true),
        ("/api/campaigns/source-ids", "GET, HEAD", true),
        ("/api/token-keys", "GET, HEAD, POST", true),
        ("/api/relays", "GET, HEAD, POST, DELETE", true),
        ("/api/relays/pause", "POST", true),
        ("/api/relays/resume", "POST", true),
        ("/api/relays/replay", "POST, DELETE", true),
        ("/api/apps", "GET, HEAD, POST, PUT, DELETE", true),
        ("/api/ad-networks", "GET, HEAD, POST, DELETE", true),
        ("/api/apps/summary", "GET, HEAD", true),
        ("/api/apps/summary/crosstab.csv", "GET, HEAD", true),
        ("/api/plist-check", "POST", true),
        ("/api/postbacks/verify", "POST", true),
        ("/development-postbacks/…", "POST", false),
        ("/api/apps/development-path", "POST, DELETE", true),
        ("/api/apple-ads/names", "GET, HEAD", true),
        ("/api/apple-ads/names/refresh", "POST", true),
        ("/api/apps/development-path/samples", "POST", true),
        ("/api/apps/setup", "GET, HEAD", true),
        ("/api/apple-ads/campaigns", "GET, HEAD, POST, DELETE", true),
        ("/api/apple-ads/summary", "GET, HEAD", true),
        ("/api/apple-ads", "GET, HEAD", true),
        ("/api/apple-ads.csv", "GET, HEAD", true),
        ("/api/summary", "GET, HEAD", true),
        ("/api/summary.csv", "GET, HEAD", true),
        ("/api/summary/crosstab.csv", "GET, HEAD", true),
        ("/api/reports", "GET, HEAD", true),
        ("/api/reports.csv", "GET, HEAD", true),
        ("/api/postbacks", "GET, HEAD", true),
        ("/api/postbacks.csv", "GET, HEAD", true),
        ("/healthz", "GET, HEAD", false),
        ("/metrics", "GET, HEAD", true),
        ("/api/rejections", "GET, HEAD", true),
        ("/admin/clock", "POST", true),
        ("/api/advertisers", "GET, HEAD, POST, DELETE", true),
        ("/api/viewer-tokens", "GET, HEAD, POST, DELETE", true),
        ("/api/whoami", "GET, HEAD", true),
        ("/api/arrivals", "GET, HEAD", true),
        ("/api/overview", "GET, HEAD", true),
        ("/api/spend", "GET, HEAD, POST, DELETE", true),
    ]

    /// The router's own table is the one above: a route added without a line there fails here,
    /// and so is tested below like every other.
    @Test func theTableAboveIsTheRoutersOwn() throws {
        let endpoint = try LiveEndpoint { $0.manualClock = true }
        defer { endpoint.stop() }
        for entry in endpoint.server.routes.router.table {
            let listed = Self.table.filter { row in
                switch entry.path {
                case .exact(let path): row.path == path
                case .prefix(let prefix): row.path.hasPrefix(prefix) && row.path.count > prefix.count
                }
            }
            #expect(listed.count == 1, "\(entry.path) is routed but not in the table (or is there twice)")
            #expect(listed.first?.allow == entry.methods.joined(separator: ", "), "\(entry.path)")
            #expect(listed.first?.token == entry.gated, "\(entry.path)")
        }
        #expect(endpoint.server.routes.router.table.count == Self.table.count, "a path in the table that is not routed")
    }

    @Test func everyPathRefusesOtherMethodsWithAllowAndGuardsWithTheToken() throws {
        let endpoint = try LiveEndpoint { $0.manualClock = true }
        defer { endpoint.stop() }
        for (path, allow, token) in Self.table {
            let wrong = endpoint.request("PATCH", path, headers: [("Authorization", "Bearer test-token")])
            #expect(wrong.status == 405, "\(path)")
            #expect(wrong.header("Allow") == allow, "\(path)")
            #expect(json(wrong)["rule"] as? String == "method_not_allowed")
            let method = String(allow.split(separator: ",")[0])
            let anonymous = endpoint.request(method, path)
            if token {
                #expect(anonymous.status == 401, "\(path) without the token")
                #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
                #expect(endpoint.request("PATCH", path).status == 401, "\(path): the token is checked before the method")
            } else {
                #expect(anonymous.status != 401, "\(path) needs no token")
            }
        }
    }

    @Test func unknownPathsAre404AndTheClockNeedsTheFlag() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for path in ["/admin/clock", "/api", "/api/unknown", "/.well-known/private-click-measurement/", "/.well-known/skadnetwork/", "/.well-known/appattribution/report"] {
            let response = endpoint.request("POST", path, headers: [("Authorization", "Bearer test-token")])
            #expect(response.status == 404, "\(path)")
            #expect(json(response)["rule"] as? String == "not_found")
        }
        // A path nobody serves is no refused report: the rejection ring keeps none of them.
        #expect(try !endpoint.get("/api/rejections").bodyText.contains("not_found"))
    }

    @Test func noRouteSetsACookie() throws {
        let endpoint = try LiveEndpoint { $0.manualClock = true }
        defer { endpoint.stop() }
        for (path, allow, _) in Self.table {
            let response = endpoint.request(String(allow.split(separator: ",")[0]), path, host: "news.example",
                                            headers: [("Authorization", "Bearer test-token"), ("Cookie", "a=b")])
            #expect(response.header("Set-Cookie") == nil, "\(path)")
        }
    }
}

/// The rules say what failed; the endpoint says which HTTP status that is.
@Suite struct ProblemStatusTests {
    @Test func reportRejectionsMapToHTTPStatuses() {
        #expect(Problem(ReportRejection(.malformedJSON, "x")).status == 400)
        #expect(Problem(ReportRejection(.outOfRange, "x")).status == 422)
        #expect(Problem(ReportRejection(.siteNotServed, "x")).status == 421)
        #expect(ReportRejection.Rule.allCases.allSatisfy { (400..<500).contains($0.httpStatus) })
    }

    @Test func requestProblemsMapByKind() {
        func status(_ kind: RequestProblem.Kind) -> Int { Problem(RequestProblem(kind, rule: "r", field: nil, detail: "d")).status }
        #expect(status(.malformed) == 400 && status(.invalid) == 422 && status(.conflict) == 409 && status(.unavailable) == 503)
    }
}
