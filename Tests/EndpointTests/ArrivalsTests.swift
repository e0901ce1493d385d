import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// "Is anything arriving?": each served site's and registered app's last arrival by path, a
/// warning after 48 hours of nothing that names what to check, the same in `/metrics`, and the
/// times kept across a restart.
@Suite struct ArrivalsTests {
    static let admin = [("Authorization", "Bearer test-token")]

    @Test func lastArrivalsAreShownAndSilenceIsCalledOut() throws {
        let document = try PostbackPathTests.vectors("generated_postbacks")
        let directory = temporaryDirectory()
        func start() throws -> LiveEndpoint {
            try LiveEndpoint(sites: ["news.example", "shop.example", "app.example"], directory: directory) { configuration in
                configuration.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
            }
        }
        var endpoint = try start()
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(AppsTests.app.utf8)).status == 201)
        let quiet = #"{"app_id":1000000099,"site":"app.example","name":"Quiet App","schema":{}}"#
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(quiet.utf8)).status == 201)

        endpoint.clock.set("2026-11-20T12:00:00Z")
        #expect(try httpRequest(port: endpoint.port, method: "POST", path: "/.well-known/private-click-measurement/report-attribution/",
                                host: "shop.example", headers: [("Content-Type", "application/json")], body: Array(reportBody().utf8)).status == 201)
        let vector = (document["vectors"] as! [[String: Any]]).first { ($0["body"] as? String)?.contains(#""app-id":1000000003"#) == true }!
        #expect(try httpRequest(port: endpoint.port, method: "POST", path: PostbackPathTests.skadnetwork, host: "app.example",
                                body: Array((vector["body"] as! String).utf8)).status == 200)
        // A refused delivery still says the front passes the path on.
        endpoint.clock.set("2026-11-20T13:00:00Z")
        #expect(try httpRequest(port: endpoint.port, method: "POST", path: PostbackPathTests.adattributionkit, host: "app.example",
                                body: Array("not a postback".utf8)).status == 400)

        func arrivals() -> [String: Any] { json(endpoint.request("GET", "/api/arrivals", headers: Self.admin)) }
        func site(_ name: String) -> [String: Any] { (arrivals()["sites"] as? [[String: Any]] ?? []).first { $0["site"] as? String == name } ?? [:] }
        func app(_ id: Int) -> [String: Any] { (arrivals()["apps"] as? [[String: Any]] ?? []).first { $0["app_id"] as? Int == id } ?? [:] }
        #expect((site("shop.example")["last_received"] as? [String: Any])?["pcm_reports"] as? String == "2026-11-20T12:00:00.000Z")
        let appSite = site("app.example")["last_received"] as? [String: Any]
        #expect(appSite?["skadnetwork"] as? String == "2026-11-20T12:00:00.000Z" && appSite?["adattributionkit"] as? String == "2026-11-20T13:00:00.000Z")
        #expect((app(1000000003)["last_received"] as? [String: Any])?["skadnetwork"] as? String == "2026-11-20T12:00:00.000Z")
        #expect(app(1000000099)["latest"] is NSNull)
        #expect(arrivals()["silent"] as? Int == 0)
        // What was accepted, apart: the report and the postback whose signature checked, not the junk.
        let accepted = site("app.example")["last_accepted"] as? [String: Any]
        #expect(accepted?["skadnetwork"] as? String == "2026-11-20T12:00:00.000Z" && accepted?["adattributionkit"] is NSNull)
        #expect((site("shop.example")["last_accepted"] as? [String: Any])?["pcm_reports"] as? String == "2026-11-20T12:00:00.000Z")
        #expect(site("app.example")["latest_accepted"] as? String == "2026-11-20T12:00:00.000Z")

        // An hour before 48 hours since app.example accepted something: not silent yet.
        endpoint.clock.set("2026-11-22T11:00:00Z")
        #expect(site("app.example")["silent"] as? Bool == false)
        // Junk anyone can send reaches the path but does not clear the silence.
        endpoint.clock.set("2026-11-22T12:00:00Z")
        for path in [PostbackPathTests.skadnetwork, PostbackPathTests.adattributionkit] {
            #expect(try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: Array("{}".utf8)).status == 400)
        }
        #expect(site("shop.example")["silent"] as? Bool == true && site("app.example")["silent"] as? Bool == true)
        #expect((site("app.example")["warning"] as? String)?.contains("none was accepted") == true)
        #expect((site("app.example")["last_received"] as? [String: Any])?["skadnetwork"] as? String == "2026-11-22T12:00:00.000Z")
        // Nothing has reached the shop since: the front is what to check.
        #expect((site("shop.example")["warning"] as? String)?.contains("passes /.well-known/private-click-measurement/") == true)
        #expect(site("news.example")["silent"] as? Bool == true, "nothing since it began to be served, two days ago")
        #expect(app(1000000003)["silent"] as? Bool == true)
        let warning = app(1000000099)["warning"] as? String ?? ""
        #expect(warning.contains("NSAdvertisingAttributionReportEndpoint") && warning.contains("AttributionCopyEndpoint") && warning.contains("https://app.example"))
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains(#"attribution_silent{kind="site",site="shop.example"} 1"#))
        #expect(metrics.contains(#"attribution_silent{kind="site",site="app.example"} 1"#))
        #expect(metrics.contains(#"attribution_last_accepted_timestamp_seconds{site="app.example",path="skadnetwork"} 1795176000"#))
        #expect(metrics.contains(#"attribution_silent{kind="app",app_id="1000000099",site="app.example"} 1"#))
        #expect(metrics.contains(#"attribution_last_received_timestamp_seconds{site="shop.example",path="pcm_reports"} 1795176000"#))
        #expect(endpoint.request("GET", "/api/arrivals?site=x", headers: Self.admin).status == 400)

        // A stop keeps them: the next start knows when each last arrived.
        endpoint.stop()
        endpoint = try start()
        defer { endpoint.stop() }
        endpoint.clock.set("2026-11-22T12:00:00Z")
        #expect((site("shop.example")["last_received"] as? [String: Any])?["pcm_reports"] as? String == "2026-11-20T12:00:00.000Z")
        #expect(site("shop.example")["silent"] as? Bool == true)
    }

    /// Hosts and app ids a stranger makes up do not grow the book past its bound.
    @Test func theBookIsBounded() {
        let arrivals = Arrivals(dataDirectory: temporaryDirectory(), clock: { .init(millisecondsSinceEpoch: 0) })
        for i in 0..<(Arrivals.capacity + 50) {
            arrivals.received(.skadnetwork, site: "s\(i).example", at: .init(millisecondsSinceEpoch: Int64(i)))
            arrivals.received(.skadnetwork, app: String(i), at: .init(millisecondsSinceEpoch: Int64(i)))
        }
        #expect(arrivals.book.sites.count == Arrivals.capacity && arrivals.book.apps.count == Arrivals.capacity)
        // Those kept are still updated.
        arrivals.received(.pcmReports, site: "s0.example", at: .init(millisecondsSinceEpoch: 99))
        #expect(arrivals.book.sites["s0.example"]?.last["pcm_reports"] == 99)
    }
}
