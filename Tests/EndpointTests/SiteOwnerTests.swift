import Foundation
import Testing
import RawHTTPClient
@testable import Endpoint

/// The site owners' endpoint over real HTTP, with `--manual-clock` walked through days by
/// `POST /admin/clock`, as a test in any language would.
private final class SiteOwnerEndpoint {
    let endpoint: LiveEndpoint
    var port: UInt16 { endpoint.port }

    init(sites: [String] = ["news.example", "shop.example"], dev: Bool = false, directory: String = temporaryDirectory(),
         configure: (inout EndpointConfiguration) -> Void = { _ in }) throws {
        endpoint = try LiveEndpoint(sites: sites, dev: dev, directory: directory) {
            $0.manualClock = true
            configure(&$0)
        }
    }

    func stop() { endpoint.stop() }

    func send(_ method: String, _ path: String, host: String = "localhost", token: String? = "test-token",
              body: String? = nil) throws -> RawResponse {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return endpoint.request(method, path, host: host, headers: headers, body: Array((body ?? "").utf8))
    }

    func setClock(_ time: String) throws {
        let response = try send("POST", "/admin/clock", body: #"{"now":"\#(time)"}"#)
        #expect(response.status == 200, "clock: \(response.bodyText)")
    }

    @discardableResult
    func register(_ kind: String, _ json: String) throws -> RawResponse {
        let response = try send("POST", "/api/\(kind)", body: json)
        #expect(response.status == 201, "\(kind): \(response.bodyText)")
        return response
    }

    /// Follows the pixel's redirect as a browser would: the trigger URL on the same host.
    @discardableResult
    func hitPixel(host: String, query: String) throws -> RawResponse {
        let redirect = try send("GET", "/conversion-pixel?" + query, host: host, token: nil)
        #expect(redirect.status == 302, "pixel: \(redirect.bodyText)")
        #expect(redirect.header("Cache-Control") == "no-store")
        let location = try #require(redirect.header("Location"))
        let url = try #require(URL(string: location))
        #expect(url.scheme == "https")
        // On the site itself, whatever subdomain the pixel was served from: the well-known paths live there.
        #expect(url.host == (host.hasPrefix("www.") ? String(host.dropFirst(4)) : host))
        let pathAndQuery = url.path + (url.query.map { "?" + $0 } ?? "")
        let trigger = try send("GET", pathAndQuery, host: host, token: nil)
        #expect(trigger.status == 200)
        #expect(trigger.header("Content-Type") == "image/gif")
        #expect(trigger.header("Cache-Control") == "no-store")
        #expect(trigger.header("Set-Cookie") == nil)
        return redirect
    }

    func report(to host: String, sourceSite: String = "news.example", sourceID: Int = 42, destination: String = "shop.example",
                triggerData: Int = 5) throws -> [String: Any] {
        let response = try endpoint.post(reportBody(sourceSite: sourceSite, sourceID: sourceID, destination: destination,
                                                    triggerData: triggerData), host: host)
        #expect(response.status == 201, "report: \(response.bodyText)")
        return json(response)
    }
}

private func reasons(_ ack: [String: Any]) -> [String] { ack["reasons"] as? [String] ?? ["?"] }

@Suite struct SiteOwnerTests {
    @Test func publisherAndAdvertiserOnOneEndpoint() throws {
        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        try e.setClock("2026-11-01T00:00:00Z")
        try e.register("campaigns", #"{"source_site":"news.example","source_id":42,"destination":"https://shop.example","name":"Winter sale","starts_at":"2026-11-01T00:00:00Z","ends_at":"2026-11-30T00:00:00Z"}"#)
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
        try e.register("conversions", #"{"site":"shop.example","name":"signup","trigger_data":2,"priority":10}"#)

        // Day 1, 10:00: a purchase on the advertiser's own site, clicked from news.example.
        try e.setClock("2026-11-02T10:00:00Z")
        let redirect = try e.hitPixel(host: "shop.example", query: "conversion=purchase&source=https%3A%2F%2Fnews.example")
        #expect(redirect.header("Location") == "https://shop.example/.well-known/private-click-measurement/trigger-attribution/05/40?attributionSource=https://news.example")

        // 23:59:59 later a report would be Debug Mode timing; at 30 h both copies are in the model.
        try e.setClock("2026-11-03T09:59:59Z")
        #expect(reasons(try e.report(to: "shop.example")) == ["debug_timing"])
        try e.setClock("2026-11-03T16:00:00Z")
        let destination = try e.report(to: "shop.example")
        #expect(destination["verdict"] as? String == "accepted")
        #expect(reasons(destination) == [])
        let source = try e.report(to: "news.example")
        #expect(source["verdict"] as? String == "accepted")
        #expect(reasons(source) == [])

        // The trigger is used up: a second destination copy has nothing to match.
        let second = try e.report(to: "shop.example")
        #expect(second["verdict"] as? String == "quarantined")
        #expect(reasons(second) == ["no_matching_trigger"])

        // A report for an id the publisher never used, and one for another advertiser.
        #expect(reasons(try e.report(to: "news.example", sourceID: 7)) == ["unknown_source_id"])
        #expect(reasons(try e.report(to: "news.example", destination: "other.example")) == ["destination_mismatch"])

        // Everything is in the export, quarantined ones included, with the matched trigger and campaign.
        let lines = try e.endpoint.export()
        #expect(lines.count == 6)
        #expect(lines.filter { $0["verdict"] as? String == "quarantined" }.count == 4)
        #expect(lines[1]["trigger_id"] as? Int == 1)
        #expect(lines[2]["campaign"] as? String == "Winter sale")
    }

    @Test func lateAndTooLateDestinationCopies() throws {
        let e = try SiteOwnerEndpoint { $0.lateCutoffDays = 10 }
        defer { e.stop() }
        try e.setClock("2026-11-01T00:00:00Z")
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
        try e.hitPixel(host: "shop.example", query: "conversion=purchase&source=https://news.example")
        try e.hitPixel(host: "shop.example", query: "conversion=purchase&source=https://news.example")
        try e.setClock("2026-11-05T00:00:00Z")
        #expect(reasons(try e.report(to: "shop.example")) == ["late"])
        try e.setClock("2026-11-11T00:00:01Z")
        let tooLate = try e.report(to: "shop.example")
        #expect(tooLate["verdict"] as? String == "quarantined")
        #expect(reasons(tooLate) == ["too_late"])
    }

    @Test func anAppDevelopersReportEndpointSite() throws {
        // App-to-web: the app's NSAdvertisingAttributionReportEndpoint is https://app.example, so
        // app.example is the source site; the advertiser's web site serves its own copy.
        let e = try SiteOwnerEndpoint(sites: ["app.example", "shop.example"])
        defer { e.stop() }
        try e.setClock("2026-11-01T00:00:00Z")
        try e.register("campaigns", #"{"source_site":"app.example","source_id":200,"destination":"shop.example","name":"In-app banner","starts_at":"2026-11-01T00:00:00Z"}"#)
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":9,"priority":63}"#)
        try e.setClock("2026-11-04T12:00:00Z")
        try e.hitPixel(host: "www.shop.example", query: "conversion=purchase&source=https://app.example")
        try e.setClock("2026-11-06T11:00:00Z")
        let destination = try e.report(to: "shop.example", sourceSite: "app.example", sourceID: 200, triggerData: 9)
        #expect(destination["verdict"] as? String == "accepted")
        #expect(reasons(destination) == [])
        let source = try e.report(to: "app.example", sourceSite: "app.example", sourceID: 200, triggerData: 9)
        #expect(source["verdict"] as? String == "accepted")
        #expect(reasons(source) == [])
    }

    @Test func theCrossSitePixelIsServedByThePublisher() throws {
        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        try e.setClock("2026-11-01T00:00:00Z")
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
        let redirect = try e.hitPixel(host: "news.example", query: "conversion=purchase&site=shop.example")
        #expect(redirect.header("Location") == "https://news.example/.well-known/private-click-measurement/trigger-attribution/05/40")
        try e.setClock("2026-11-02T12:00:00Z")
        let destination = try e.report(to: "shop.example")
        #expect(destination["verdict"] as? String == "accepted")
        #expect(reasons(destination) == [])
    }

    @Test func theLedgerAndItsUsedTriggersSurviveARestart() throws {
        let directory = temporaryDirectory()
        do {
            let e = try SiteOwnerEndpoint(directory: directory)
            try e.setClock("2026-11-01T00:00:00Z")
            try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
            try e.hitPixel(host: "shop.example", query: "conversion=purchase&source=https://news.example")
            try e.hitPixel(host: "shop.example", query: "conversion=purchase&source=https://news.example")
            try e.setClock("2026-11-02T06:00:00Z")
            #expect(try e.report(to: "shop.example")["verdict"] as? String == "accepted")
            e.stop()
        }
        let e = try SiteOwnerEndpoint(directory: directory)
        defer { e.stop() }
        try e.setClock("2026-11-02T07:00:00Z")
        #expect(try e.send("GET", "/api/conversions").bodyText.contains("purchase"))
        #expect(try e.report(to: "shop.example")["verdict"] as? String == "accepted")
        #expect(reasons(try e.report(to: "shop.example")) == ["no_matching_trigger"])
    }

    @Test func aTriggerPathWebKitWouldRejectIsRefusedAndNotRecorded() throws {
        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        try e.setClock("2026-11-01T00:00:00Z")
        let prefix = "/.well-known/private-click-measurement/trigger-attribution/"
        for bad in ["5", "5/1", "16", "05/64", "05/", "05/40/", "05/40/01", "05/40?utm_source=x", "05?attributionSource=news.example"] {
            let response = try e.send("GET", prefix + bad, host: "shop.example", token: nil)
            #expect((400..<500).contains(response.status), "\(bad) answered \(response.status)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        // Nothing was recorded: a report a day later finds no ledger for the site at all.
        try e.setClock("2026-11-02T06:00:00Z")
        #expect(reasons(try e.report(to: "shop.example")) == ["unverified_timing"])
        #expect(try e.send("HEAD", prefix + "05/40", host: "shop.example", token: nil).status == 200)
    }

    @Test func thePixelExplainsWhatIsWrong() throws {
        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        let unknown = try e.send("GET", "/conversion-pixel?conversion=purchase", host: "shop.example", token: nil)
        #expect(unknown.status == 404)
        #expect(json(unknown)["rule"] as? String == "unknown_conversion")
        #expect(unknown.bodyText.contains("POST /api/conversions"))
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
        let badSource = try e.send("GET", "/conversion-pixel?conversion=purchase&source=news.example", host: "shop.example", token: nil)
        #expect(badSource.status == 400)
        #expect(json(badSource)["field"] as? String == "source")
        #expect(try e.send("GET", "/conversion-pixel", host: "shop.example", token: nil).status == 400)
    }

    @Test func adminAPIRefusesInvalidInputAndWritesNothing() throws {
        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        try e.register("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)
        try e.register("campaigns", #"{"source_site":"news.example","source_id":42,"destination":"shop.example","name":"Winter","starts_at":"2026-11-01T00:00:00Z","ends_at":"2026-11-30T00:00:00Z"}"#)
        let cases: [(kind: String, body: String, status: Int, field: String?)] = [
            ("campaigns", #"{"source_site":"news.example","source_id":256,"destination":"shop.example","name":"A","starts_at":"2027-01-01T00:00:00Z"}"#, 422, "source_id"),
            ("conversions", #"{"site":"shop.example","name":"a","trigger_data":16}"#, 422, "trigger_data"),
            ("conversions", #"{"site":"shop.example","name":"a","trigger_data":1,"priority":64}"#, 422, "priority"),
            ("campaigns", #"{"source_site":"news.example","source_id":1,"destination":"co.uk","name":"A","starts_at":"2027-01-01T00:00:00Z"}"#, 422, "destination"),
            ("campaigns", #"{"source_site":"news.example","source_id":1,"destination":"news.example","name":"A","starts_at":"2027-01-01T00:00:00Z"}"#, 422, "destination"),
            ("conversions", #"{"site":"shop.example","name":"purchase","trigger_data":1}"#, 409, "name"),
            ("campaigns", #"{"source_site":"news.example","source_id":1,"destination":"shop.example","name":"Winter","starts_at":"2027-01-01T00:00:00Z"}"#, 409, "name"),
            ("campaigns", #"{"source_site":"news.example","source_id":1,"destination":"shop.example","name":"B","starts_at":"2027-02-01T00:00:00Z","ends_at":"2027-01-01T00:00:00Z"}"#, 422, "ends_at"),
            ("campaigns", #"{"source_site":"news.example","source_id":42,"destination":"shop.example","name":"C","starts_at":"2026-12-01T00:00:00Z"}"#, 409, "source_id"),
            ("campaigns", #"{"source_site":"news.example""#, 400, nil),
        ]
        for c in cases {
            let response = try e.send("POST", "/api/\(c.kind)", body: c.body)
            #expect(response.status == c.status, "\(c.body): \(response.bodyText)")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(json(response)["field"] as? String == c.field, "\(c.body)")
        }
        let overlap = try e.send("POST", "/api/campaigns", body: cases[8].body)
        #expect(overlap.bodyText.contains("free again from 2026-12-09T00:00:00.001Z"))
        // Nothing was written: still one of each, in memory and on disk.
        #expect((try JSONSerialization.jsonObject(with: Data(e.send("GET", "/api/conversions").body)) as? [Any])?.count == 1)
        #expect((try JSONSerialization.jsonObject(with: Data(e.send("GET", "/api/campaigns").body)) as? [Any])?.count == 1)
        let onDisk = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: e.endpoint.directory + "/registry.json"))) as? [String: [Any]]
        #expect(onDisk?["campaigns"]?.count == 1)
        #expect(onDisk?["conversions"]?.count == 1)
        // Without the token nothing is registered.
        #expect(try e.send("POST", "/api/conversions", token: nil, body: #"{"site":"shop.example","name":"x","trigger_data":1}"#).status == 401)
        // And registrations can be removed.
        #expect(try e.send("DELETE", "/api/conversions?site=shop.example&name=purchase").status == 204)
        #expect(try e.send("DELETE", "/api/conversions?site=shop.example&name=purchase").status == 404)
    }

    @Test func theClockPathExistsOnlyWithTheFlag() throws {
        let plain = try LiveEndpoint()
        defer { plain.stop() }
        let response = try httpRequest(port: plain.port, method: "POST", path: "/admin/clock",
                                       headers: [("Authorization", "Bearer test-token")], body: Array(#"{"now":"2026-11-20T10:00:00Z"}"#.utf8))
        #expect(response.status == 404)

        let e = try SiteOwnerEndpoint()
        defer { e.stop() }
        #expect(try e.send("POST", "/admin/clock", token: nil, body: #"{"now":"2026-11-20T10:00:00Z"}"#).status == 401)
        #expect(try e.send("POST", "/admin/clock", body: #"{"now":"tomorrow"}"#).status == 400)
        try e.setClock("2030-01-01T00:00:00Z")
        #expect(try e.report(to: "news.example")["received_at"] as? String == "2030-01-01T00:00:00.000Z")
    }

    @Test func configFileRegistrationsAreAddedAtStart() throws {
        let directory = temporaryDirectory()
        let config = directory + "/config.json"
        try Data(#"{"sites":["news.example","shop.example"],"conversions":[{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}],"campaigns":[{"source_site":"news.example","source_id":1,"destination":"shop.example","name":"Launch","starts_at":"2026-11-01T00:00:00Z"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        guard case .run(var configuration) = try EndpointConfiguration.parse(arguments: ["--config", config], environment: [:]) else {
            Issue.record("not a run configuration")
            return
        }
        configuration.dataDirectory = directory + "/data"
        configuration.port = 0
        configuration.adminToken = "t"
        configuration.accessLog = false
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        try TestTokenKeys.seed(configuration.dataDirectory, sites: configuration.sites)
        for _ in 0..<2 {  // twice: the second start finds them registered and adds nothing
            let server = try EndpointServer(configuration: configuration)
            let port = try server.start()
            let list = try httpRequest(port: port, method: "GET", path: "/api/campaigns", headers: [("Authorization", "Bearer t")])
            #expect((try JSONSerialization.jsonObject(with: Data(list.body)) as? [Any])?.count == 1)
            server.shutdown()
            server.waitUntilStopped()
        }
        let bad = directory + "/bad.json"
        try Data(#"{"dev":true,"conversions":[{"site":"shop.example","name":"x","trigger_data":16}]}"#.utf8).write(to: URL(fileURLWithPath: bad))
        #expect(throws: EndpointConfiguration.ParseError.self) {
            try EndpointConfiguration.parse(arguments: ["--config", bad], environment: [:])
        }
    }
}
