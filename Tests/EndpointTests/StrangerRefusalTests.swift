import Foundation
import Testing
@testable import Endpoint

/// What anyone can ask without a token tells nothing a site owner registered or which sites are
/// served: the pixel's refusals, `/healthz`.
@Suite struct StrangerRefusalTests {
    static let secretNames = ["Black Friday purchase", "Gold tier signup"]

    static func endpoint() throws -> LiveEndpoint {
        let endpoint = try LiveEndpoint()
        for (name, data) in zip(secretNames, [3, 5]) {
            let body = #"{"site":"shop.example","name":"\#(name)","trigger_data":\#(data)}"#
            precondition(endpoint.request("POST", "/api/conversions", headers: AccessTests.admin, body: Array(body.utf8)).status == 201)
        }
        return endpoint
    }

    /// Every path that takes a request for a site asks one rule (`ServedSites`) and refuses an
    /// unserved host the same way: 421 `site_not_served`, field `Host`, in one wording that names
    /// the host it was sent to and no site that is served.
    @Test(arguments: [
        ("POST", "/.well-known/private-click-measurement/report-attribution/", "the report"),
        ("GET", "/.well-known/private-click-measurement/trigger-attribution/05", "the trigger URL"),
        ("GET", "/.well-known/private-click-measurement/get-token-public-key/", "the request"),
        ("POST", "/.well-known/private-click-measurement/sign-unlinkable-token/", "the request"),
        ("POST", "/.well-known/skadnetwork/report-attribution/", "the postback"),
        ("POST", "/.well-known/appattribution/report-attribution/", "the postback"),
        ("GET", "/conversion-pixel?conversion=x", "the pixel"),
        ("POST", "/conversion-value", "the question"),
        ("POST", "/apple-ads/attribution", "the token"),
    ])
    func everySitePathRefusesAnUnservedHostOneWay(method: String, path: String, what: String) throws {
        let endpoint = HostileInputTests.refusing
        let body = method == "POST" ? Array(reportBody(sourceSite: "elsewhere.example", destination: "other.example").utf8) : []
        let response = endpoint.request(method, path, host: "elsewhere.example",
                                        headers: method == "POST" ? [("Content-Type", "application/json")] : [], body: body)
        #expect(response.status == 421, "\(path)")
        let problem = json(response)
        #expect(problem["rule"] as? String == "site_not_served", "\(path)")
        #expect(problem["detail"] as? String == "\(what) was sent to \"elsewhere.example\", which this endpoint does not serve", "\(path)")
        #expect(!response.bodyText.contains("news.example") && !response.bodyText.contains("shop.example"), "\(path)")
    }

    @Test func thePixelRefusesWithoutListingNamesOrSites() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        var probes = ["x", "purchase", "%00", "%FF", String(repeating: "a", count: 2000), "Black%20Friday", "black friday purchase"]
        probes += (0..<200).map { "guess-\($0)" }
        for host in ["shop.example", "news.example"] {
            for name in probes {
                let response = endpoint.request("GET", "/conversion-pixel?conversion=\(name)&site=shop.example", host: host)
                #expect([400, 404].contains(response.status), "\(name.prefix(20)) at \(host): \(response.status)")
                for secret in Self.secretNames { #expect(!response.bodyText.contains(secret)) }
            }
        }
        // A site not served here is refused, naming no site that is.
        for site in ["other.example", "elsewhere.example", "example.com"] {
            let response = endpoint.request("GET", "/conversion-pixel?conversion=x&site=\(site)", host: "shop.example")
            #expect(response.status == 422 && json(response)["rule"] as? String == "site_not_served" && json(response)["field"] as? String == "site")
            #expect(!response.bodyText.contains("news.example") && !response.bodyText.contains("shop.example"))
        }
        // The real name still redirects, from the site itself and from a publisher.
        let name = "Black%20Friday%20purchase"
        #expect(endpoint.request("GET", "/conversion-pixel?conversion=\(name)", host: "shop.example").status == 302)
        #expect(endpoint.request("GET", "/conversion-pixel?conversion=\(name)&site=shop.example", host: "news.example").status == 302)
    }

    @Test func healthTellsAStrangerTheStatusAlone() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        for token: String? in [nil, "wrong", String(repeating: "t", count: 5000)] {
            let response = try endpoint.get("/healthz", token: token)
            #expect(response.status == 200 && json(response).keys.sorted() == ["status"])
        }
        let scoped = try AccessTests.token(endpoint, advertiser: nil)
        #expect(json(try endpoint.get("/healthz", token: scoped))["reports"] as? Int == 1)
        #expect(json(try endpoint.get("/healthz"))["reports"] as? Int == 1)
    }
}
