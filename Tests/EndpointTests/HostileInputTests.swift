import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// What a stranger (or a careless registration) can send, over real HTTP: every number at its
/// extremes, hosts that are no hosts, forged postbacks sent first, repeated parameters on every
/// path, reads pipelined behind writes. The promise each test holds: a clear 4xx naming the field
/// and rule, never a crash, never a 5xx, nothing acknowledged lost.
@Suite struct HostileInputTests {
    static let app = #"{"app_id":525463029,"site":"app.example","name":"Hostile","schema":{"fine":[{"from":0,"to":9,"meaning":"levels","events":["level"]},{"from":10,"to":63,"meaning":"purchase","revenue":{"min":0,"max":100,"currency":"EUR"}}]}}"#
    static let admin = [("Authorization", "Bearer test-token")]
    static let extremes = ["1e308", "-1e308", "1.7976931348623157e308", "1e400", "-0", "0.0", "-0.0", "9223372036854775807",
                           "9223372036854775808", "18446744073709551616", "-9223372036854775809", "1e-300", "\"NaN\"", "\"Infinity\"",
                           "null", "true", "[]", "{}", String(repeating: "9", count: 400)]

    func ask(_ endpoint: LiveEndpoint, _ body: String, host: String = "app.example") throws -> RawResponse {
        try httpRequest(port: endpoint.port, method: "POST", path: "/conversion-value", host: host,
                        headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }

    /// A refusal a client can act on: 4xx, problem+json, the rule and (when given) the field.
    func expectRefusal(_ response: RawResponse, field: String? = nil, rule: String? = nil, _ what: String) {
        #expect((400...499).contains(response.status), "\(what): \(response.status) \(response.bodyText)")
        #expect(response.header("Content-Type") == "application/problem+json", "\(what)")
        if let field { #expect(json(response)["field"] as? String == field, "\(what): \(response.bodyText)") }
        if let rule { #expect(json(response)["rule"] as? String == rule, "\(what): \(response.bodyText)") }
    }

    // MARK: - Numbers: no trap on anything a request or a registration reaches

    @Test func theRevenueThatCrashedTheEndpointIsRefusedAndTheEndpointLives() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app.utf8)).status == 201)
        endpoint.clock.set("2026-11-25T10:00:00Z")
        // The request of the report: 1e20 EUR in a 0–100 EUR range.
        let crash = try ask(endpoint, #"{"app_id":525463029,"first_launch":"2026-11-25T09:00:00Z","revenue":{"EUR":1e20}}"#)
        expectRefusal(crash, field: "revenue.EUR", rule: "out_of_range", "1e20 EUR")
        // The largest amount allowed reaches the top of the range.
        let top = try ask(endpoint, #"{"app_id":525463029,"first_launch":"2026-11-25T09:00:00Z","revenue":{"EUR":1e12}}"#)
        #expect(top.status == 200 && json(top)["conversion_value"] as? Int == 63, "\(top.bodyText)")
        let ordinary = try ask(endpoint, #"{"app_id":525463029,"first_launch":"2026-11-25T09:00:00Z","revenue":{"EUR":1}}"#)
        #expect(ordinary.status == 200 && json(ordinary)["conversion_value"] as? Int == 10)
    }

    @Test func everyNumericFieldOfTheConversionValueAPIAtItsExtremes() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app.utf8)).status == 201)
        endpoint.clock.set("2026-11-25T10:00:00Z")
        let base = #"{"app_id":525463029,"first_launch":"2026-11-25T09:00:00Z""#
        let fields: [(template: String, field: String)] = [
            (#"{"app_id":X,"first_launch":"2026-11-25T09:00:00Z"}"#, "app_id"),
            (#"{"app_id":525463029,"first_launch":X}"#, "first_launch"),
            (base + #","conversion_value":X}"#, "conversion_value"),
            (base + #","events":{"level":X}}"#, "events.level"),
            (base + #","revenue":{"EUR":X}}"#, "revenue.EUR"),
        ]
        for (template, field) in fields {
            for value in Self.extremes {
                let response = try ask(endpoint, template.replacingOccurrences(of: "X", with: value))
                // Some extremes are valid for some fields (a count of 2^63 − 1, revenue 0.0): then 200.
                if response.status == 200 { continue }
                expectRefusal(response, field: field, "\(field) = \(value.prefix(30))")
            }
        }
        #expect(try httpRequest(port: endpoint.port, method: "GET", path: "/healthz").status == 200)
    }

    @Test func degenerateRevenueRangesAreRefusedNamingTheField() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        let ranges: [(min: String, max: String, field: String, rule: String)] = [
            ("0", "1e-300", "schema.fine[1].revenue", "degenerate_range"),
            ("5", "5", "schema.fine[1].revenue", "degenerate_range"),
            ("5", "4", "schema.fine[1].revenue", "degenerate_range"),
            ("0", "1e308", "schema.fine[1].revenue.max", "out_of_range"),
            ("0", "1e400", "schema.fine[1].revenue.max", "out_of_range"),
            ("-1", "10", "schema.fine[1].revenue.min", "out_of_range"),
            ("-0", "10", "schema.fine[1].revenue.min", "out_of_range"),
            ("-1e308", "10", "schema.fine[1].revenue.min", "out_of_range"),
            ("\"NaN\"", "10", "schema.fine[1].revenue.min", "wrong_type"),
            ("0", "\"Infinity\"", "schema.fine[1].revenue.max", "wrong_type"),
        ]
        for (min, max, field, rule) in ranges {
            let body = Self.app.replacingOccurrences(of: #""min":0,"max":100"#, with: #""min":\#(min),"max":\#(max)"#)
            let response = endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(body.utf8))
            expectRefusal(response, field: field, rule: rule, "revenue \(min)–\(max)")
        }
        for (value, rule) in [("9223372036854775808", "out_of_range"), ("-0", "wrong_type"), ("1e308", "wrong_type"), ("\"1\"", "wrong_type")] {
            let body = Self.app.replacingOccurrences(of: #""from":10"#, with: #""from":\#(value)"#)
            expectRefusal(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(body.utf8)),
                          field: "schema.fine[1].from", rule: rule, "from = \(value)")
        }
        let huge = Self.app.replacingOccurrences(of: "525463029", with: "9223372036854775808")
        let refused = endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(huge.utf8))
        expectRefusal(refused, field: "app_id", rule: "out_of_range", "app_id 2^63")
        #expect((json(refused)["detail"] as? String)?.contains("9223372036854775808") == true, "the detail says what came")
        // None of them was registered; the good one still is.
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app.utf8)).status == 201)
    }

    @Test func negativeZeroIsNoSourceID() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let response = try endpoint.post(reportBody().replacingOccurrences(of: #""source_id":42"#, with: #""source_id":-0"#))
        #expect(response.status == 422 && json(response)["field"] as? String == "source_id", "\(response.bodyText)")
        #expect(try endpoint.export().isEmpty)
    }

    // MARK: - Host is a host

    static let badHosts = ["shop.example:@evil.example", "news.example:abc", "news.example:", "news.example:0", "news.example:65536",
                           "news.example:123456", "a..example", "-news.example", "news-.example", "news example", "news.example/x",
                           "évil.example", "[::1", "[zz::1]", "news_example.com", "news.example:80:80", "@evil.example", ""]

    /// One endpoint for the tests whose every request is refused before anything is kept (and
    /// for every argument of each): starting one per test costs a log, keys and threads each
    /// time, for nothing a test could tell apart. It goes with the process.
    static let refusing = try! LiveEndpoint(sites: ["news.example", "shop.example", "app.example"])

    @Test(arguments: badHosts) func aHostThatIsNoHostIsRefusedOnEveryPath(host: String) throws {
        let endpoint = Self.refusing
        let requests: [(String, String, [UInt8])] = [
            ("POST", "/.well-known/private-click-measurement/report-attribution/", Array(reportBody().utf8)),
            ("GET", "/.well-known/private-click-measurement/trigger-attribution/05", []),
            ("GET", "/.well-known/private-click-measurement/get-token-public-key/", []),
            ("POST", "/.well-known/private-click-measurement/sign-unlinkable-token/", Array("{}".utf8)),
            ("GET", "/conversion-pixel?conversion=purchase", []),
            ("POST", "/.well-known/skadnetwork/report-attribution/", Array("{}".utf8)),
            ("POST", "/.well-known/appattribution/report-attribution/", Array("{}".utf8)),
            ("POST", "/apple-ads/attribution", Array("token".utf8)),
        ]
        for (method, path, body) in requests {
            let response = try httpRequest(port: endpoint.port, method: method, path: path, host: host,
                                           headers: [("Content-Type", "application/json")], body: body)
            // An empty Host is refused by the HTTP layer itself; every other is refused by name.
            if host.isEmpty {
                #expect(response.status == 400, "\(path)")
                continue
            }
            expectRefusal(response, rule: "invalid_host", "\(method) \(path) with Host \(host)")
            #expect(response.status == 400)
            #expect(response.header("Location") == nil)
        }
    }

    @Test func theRedirectIsBuiltFromTheSiteNeverFromTheHeader() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let conversion = #"{"site":"shop.example","name":"purchase","trigger_data":5}"#
        #expect(endpoint.request("POST", "/api/conversions", headers: Self.admin, body: Array(conversion.utf8)).status == 201)
        for (host, origin) in [("shop.example", "https://shop.example"), ("Shop.Example.", "https://shop.example"),
                               ("www.shop.example:8443", "https://shop.example:8443"), ("WWW.SHOP.EXAMPLE", "https://shop.example")] {
            let redirect = try httpRequest(port: endpoint.port, method: "GET", path: "/conversion-pixel?conversion=purchase", host: host)
            #expect(redirect.status == 302, "\(host): \(redirect.bodyText)")
            #expect(redirect.header("Location") == origin + "/.well-known/private-click-measurement/trigger-attribution/05/00", "\(host)")
        }
        // A served site's pixel that names its own site as the click's source: WebKit stores no such click.
        let selfSourced = try httpRequest(port: endpoint.port, method: "GET",
                                          path: "/conversion-pixel?conversion=purchase&source=https://shop.example", host: "shop.example")
        expectRefusal(selfSourced, field: "source", rule: "same_site", "self-sourced pixel")
        let trigger = try httpRequest(port: endpoint.port, method: "GET",
                                      path: "/.well-known/private-click-measurement/trigger-attribution/05?attributionSource=https://shop.example",
                                      host: "shop.example")
        expectRefusal(trigger, field: "attributionSource", rule: "same_site", "self-sourced trigger")
        // A pixel on a site this endpoint does not serve would send its trigger elsewhere.
        let elsewhere = try httpRequest(port: endpoint.port, method: "GET", path: "/conversion-pixel?conversion=purchase&site=shop.example",
                                        host: "other.example")
        expectRefusal(elsewhere, rule: "site_not_served", "pixel on an unserved site")
    }

    @Test func aForwardedHostIsCheckedLikeHost() throws {
        let endpoint = try LiveEndpoint(trustedProxies: ["127.0.0.1"])
        defer { endpoint.stop() }
        let bad = try endpoint.post(reportBody(), host: "news.example", headers: [("X-Forwarded-Host", "news.example:@evil.example")])
        expectRefusal(bad, field: "X-Forwarded-Host", rule: "invalid_host", "forwarded")
        let good = try endpoint.post(reportBody(), host: "internal", headers: [("X-Forwarded-Host", "evil.example, NEWS.example:443")])
        #expect(good.status == 201, "\(good.bodyText)")
    }

    // MARK: - Forged postbacks sent first

    static func generated(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: repositoryRoot + "/Tests/PostbackTests/Resources/vectors/generated_postbacks.json")
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let vectors = document["vectors"] as! [[String: Any]]
        return try #require(vectors.first { $0["name"] as? String == name }?["body"] as? String)
    }

    static func forge(_ body: String) throws -> String {
        var object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as! [String: Any]
        if let jws = object["jws-string"] as? String {
            let parts = jws.split(separator: ".")
            object["jws-string"] = parts[0] + "." + parts[1] + "." + String(repeating: "A", count: 86)
        } else {
            object["attribution-signature"] = "MAYCAQACAQA="  // a DER signature of two zero integers
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test(arguments: ["adattributionkit_1", "skadnetwork_4.0_18"]) func aForgeryStoredFirstNeverErasesTheGenuinePostback(name: String) throws {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath:
            repositoryRoot + "/Tests/PostbackTests/Resources/vectors/generated_postbacks.json"))) as! [String: Any]
        let endpoint = try LiveEndpoint(sites: ["app.example"]) {
            $0.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
        }
        defer { endpoint.stop() }
        let genuine = try Self.generated(name)
        let path = name.hasPrefix("skadnetwork") ? PostbackPathTests.skadnetwork : PostbackPathTests.adattributionkit
        func send(_ body: String) throws -> [String: Any] {
            let response = try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: Array(body.utf8))
            #expect(response.status == 200, "\(response.bodyText)")
            return json(response)
        }
        let forged = try send(try Self.forge(genuine))
        #expect(forged["verdict"] as? String == "quarantined" && forged["reasons"] as? [String] == ["signature_invalid"], "\(forged)")
        let real = try send(genuine)
        #expect(real["verdict"] as? String == "accepted" && real["reasons"] as? [String] == [], "\(real)")
        // The device's retry is the genuine one's; a second forgery is a conflict of its own.
        #expect(try send(genuine)["retry"] as? Bool == true)
        #expect(try send(try Self.forge(genuine))["retry"] as? Bool == true, "the same forgery again is its own retry")
        // Nor does a restart change it: replay knows which delivery was verified.
        let directory = endpoint.directory
        endpoint.stop()
        let restarted = try LiveEndpoint(sites: ["app.example"], directory: directory) {
            $0.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
        }
        defer { restarted.stop() }
        let response = try httpRequest(port: restarted.port, method: "POST", path: path, host: "app.example", body: Array(genuine.utf8))
        #expect(json(response)["retry"] as? Bool == true && json(response)["id"] as? Int == real["id"] as? Int)
    }

    // MARK: - Read-your-writes

    @Test func aReadPipelinedBehindAReportSeesIt() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let client = try RawHTTPClient(port: endpoint.port)
        let body = reportBody()
        try client.send("POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: news.example\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                        + "GET /api/reports HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer test-token\r\n\r\n"
                        + "GET /healthz HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer test-token\r\n\r\n")
        let stored = try client.readResponse()
        #expect(stored.status == 201)
        let id = try #require(json(stored)["id"] as? Int)
        let export = try client.readResponse()
        #expect(export.bodyText.contains("\"id\":\(id),"), "\(export.bodyText)")
        let health = try client.readResponse()
        #expect(json(health)["reports"] as? Int == 1)
    }

    // MARK: - One rule for repeated query parameters

    @Test func aRepeatedQueryParameterIsRefusedOnEveryPath() throws {
        let endpoint = Self.refusing  // refusals only: nothing it sends changes what the others see
        let paths = [
            ("POST", "/.well-known/private-click-measurement/report-attribution/"),
            ("GET", "/.well-known/private-click-measurement/trigger-attribution/05"),
            ("GET", "/.well-known/private-click-measurement/get-token-public-key/"),
            ("POST", "/.well-known/private-click-measurement/sign-unlinkable-token/"),
            ("POST", "/.well-known/skadnetwork/report-attribution/"), ("POST", "/.well-known/appattribution/report-attribution/"),
            ("POST", "/conversion-value"), ("POST", "/apple-ads/attribution"), ("GET", "/apple-ads/attribution/00"),
            ("GET", "/conversion-pixel"), ("GET", "/api/conversions"), ("DELETE", "/api/campaigns"), ("GET", "/api/token-keys"),
            ("GET", "/api/apps"), ("DELETE", "/api/apps"), ("GET", "/api/ad-networks"), ("GET", "/api/apple-ads/campaigns"),
            ("GET", "/api/apps/summary"), ("GET", "/api/apple-ads/summary"), ("POST", "/api/plist-check"),
            ("GET", "/api/summary"), ("GET", "/api/summary.csv"), ("GET", "/api/reports"), ("GET", "/api/reports.csv"),
            ("GET", "/api/postbacks"), ("GET", "/api/postbacks.csv"), ("GET", "/api/apple-ads"), ("GET", "/api/apple-ads.csv"),
            ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/api/rejections"), ("GET", "/"), ("GET", "/app.js"),
        ]
        let before = (json(endpoint.request("GET", "/api/rejections", headers: Self.admin))["counts"] as? [String: Int])?["repeated_query_parameter"] ?? 0
        for (method, path) in paths {
            for query in ["since=2026-11-01&since=2026-11-02", "source=a&source=b", "x=1&x=2", "a=1&b=2&a=3", "n%61me=1&name=2"] {
                let response = try httpRequest(port: endpoint.port, method: method, path: path + "?" + query, host: "news.example",
                                               headers: Self.admin)
                expectRefusal(response, rule: "repeated_query_parameter", "\(method) \(path)?\(query)")
                #expect(response.status == 400)
            }
        }
        let counts = json(endpoint.request("GET", "/api/rejections", headers: Self.admin))["counts"] as? [String: Int]
        // Counted once each (no other test of the suite repeats a parameter).
        #expect(counts?["repeated_query_parameter"] == before + paths.count * 5)
    }

    // MARK: - Wrong acceptances and unclear errors

    @Test func registrationsMustNameAServedSite() throws {
        let endpoint = Self.refusing  // refusals only: nothing it sends changes what the others see
        let refusals: [(String, String, String)] = [
            ("/api/apps", Self.app.replacingOccurrences(of: "app.example", with: "other.example"), "site"),
            ("/api/conversions", #"{"site":"other.example","name":"purchase","trigger_data":5}"#, "site"),
            ("/api/campaigns", #"{"source_site":"other.example","source_id":1,"destination":"shop.example","name":"Winter","starts_at":"2026-11-01T00:00:00Z"}"#, "source_site"),
        ]
        for (path, body, field) in refusals {
            expectRefusal(endpoint.request("POST", path, headers: Self.admin, body: Array(body.utf8)), field: field, rule: "site_not_served", path)
        }
    }

    @Test func eachKindOfBadJSONHasItsOwnRule() throws {
        let endpoint = Self.refusing  // refusals only: nothing it sends changes what the others see
        let bodies: [([UInt8], String)] = [
            (Array(#"{"app_id":1,"app_id":2}"#.utf8), "duplicate_key"),
            (Array(#"{"app_id":"\ud800"}"#.utf8), "malformed_json"),
            (Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8), "too_deep"),
            (Array(#"{"app_id":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), "invalid_utf8"),
            (Array("app_id=1".utf8), "malformed_json"),
        ]
        for (body, rule) in bodies {
            let response = try httpRequest(port: endpoint.port, method: "POST", path: "/conversion-value", host: "app.example", body: body)
            expectRefusal(response, rule: rule, rule)
            #expect(response.status == 400)
            // The same rules on an admin body.
            expectRefusal(endpoint.request("POST", "/api/apps", headers: Self.admin, body: body), rule: rule, "/api/apps \(rule)")
        }
    }

    @Test func refusedTriggersAreCountedAndKept() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let refused = try httpRequest(port: endpoint.port, method: "GET",
                                      path: "/.well-known/private-click-measurement/trigger-attribution/16", host: "shop.example")
        expectRefusal(refused, field: "trigger_data", rule: "out_of_range", "trigger 16")
        let rejections = json(endpoint.request("GET", "/api/rejections", headers: Self.admin))
        #expect((rejections["counts"] as? [String: Int])?["out_of_range"] == 1)
        let metrics = endpoint.request("GET", "/metrics", headers: Self.admin).bodyText
        #expect(metrics.contains(#"attribution_requests_rejected_total{rule="out_of_range"} 1"#))
    }

    @Test func aPlistWithAKeyTwiceOrNestedAbsurdlyIsExplained() throws {
        let endpoint = Self.refusing  // refusals only: nothing it sends changes what the others see
        let twice = #"<?xml version="1.0"?><plist version="1.0"><dict><key>AttributionCopyEndpoint</key><string>https://app.example</string><key>AttributionCopyEndpoint</key><string>https://other.example</string></dict></plist>"#
        let report = json(endpoint.request("POST", "/api/plist-check", headers: Self.admin, body: Array(twice.utf8)))
        let findings = report["findings"] as? [[String: Any]] ?? []
        #expect(findings.contains { $0["rule"] as? String == "duplicate_key" && $0["key"] as? String == "AttributionCopyEndpoint" }, "\(report)")
        let deep = "<plist version=\"1.0\">" + String(repeating: "<array>", count: 5000) + String(repeating: "</array>", count: 5000) + "</plist>"
        let refused = endpoint.request("POST", "/api/plist-check", headers: Self.admin, body: Array(deep.utf8))
        expectRefusal(refused, rule: "not_a_property_list", "deep plist")
        let broken = #"<?xml version="1.0"?><plist version="1.0"><dict><key>a</key></dict></plist>"#
        let unclear = endpoint.request("POST", "/api/plist-check", headers: Self.admin, body: Array(broken.utf8))
        #expect((json(unclear)["detail"] as? String)?.contains("line 1") == true, "\(unclear.bodyText)")
        let real = #"<plist version="1.0"><dict><key>AdAttributionKitConfigurations</key><dict><key>AttributionCooldown</key><dict><key>install-cooldown-hours</key><real>1e300</real></dict></dict></dict></plist>"#
        #expect(endpoint.request("POST", "/api/plist-check", headers: Self.admin, body: Array(real.utf8)).status == 200)
    }

    // MARK: - What a second attack found (a helper's, against the release binary)

    @Test func timesThatAnOffsetCarriesPastTheFourDigitYearsAreRefusedAndTheRegistrySurvives() throws {
        let directory = temporaryDirectory()
        var endpoint = try LiveEndpoint(directory: directory)
        for startsAt in ["0000-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"] {
            let body = #"{"source_site":"news.example","source_id":1,"destination":"shop.example","name":"x","starts_at":"\#(startsAt)"}"#
            expectRefusal(endpoint.request("POST", "/api/campaigns", headers: Self.admin, body: Array(body.utf8)),
                          field: "starts_at", "starts_at \(startsAt)")
        }
        let fine = #"{"source_site":"news.example","source_id":1,"destination":"shop.example","name":"x","starts_at":"9999-12-30T23:59:59-23:59"}"#
        #expect(endpoint.request("POST", "/api/campaigns", headers: Self.admin, body: Array(fine.utf8)).status == 201)
        endpoint.stop()
        endpoint = try LiveEndpoint(directory: directory)  // the registry reads back what it wrote
        defer { endpoint.stop() }
        #expect(endpoint.request("GET", "/api/campaigns", headers: Self.admin).bodyText.contains("9999-12-31T23:58:59.000Z"))
    }

    @Test func theHostOfAnAbsoluteURLIsTheRequestsHostAndIsChecked() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let body = reportBody()
        for (target, status) in [("http://shop.example:@evil.example/", 400), ("https://evil.example/", 421), ("http://news.example/", 201)] {
            let client = try RawHTTPClient(port: endpoint.port)
            try client.send("POST \(target).well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: news.example\r\n"
                            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(try client.readResponse().status == status, "\(target)")
        }
        #expect(try endpoint.export().count == 1)
    }

    @Test func everyForwardedHostLineCountsAndTheLastWins() throws {
        let endpoint = try LiveEndpoint(trustedProxies: ["127.0.0.1"])
        defer { endpoint.stop() }
        let response = try endpoint.post(reportBody(), host: "internal",
                                         headers: [("X-Forwarded-Host", "news.example"), ("X-Forwarded-Host", "evil.example")])
        #expect(response.status == 421 && json(response)["rule"] as? String == "site_not_served", "\(response.bodyText)")
    }

    @Test(arguments: ["/healthz", "/metrics", "/api/summary", "/", "/app.js", "/no-such-path", "/apple-ads/attribution/00",
                      "/api/plist-check", "/conversion-value"])
    func everyPathChecksItsHost(path: String) throws {
        let endpoint = Self.refusing
        let method = ["/api/plist-check", "/conversion-value"].contains(path) ? "POST" : "GET"
        let response = try httpRequest(port: endpoint.port, method: method, path: path, host: "shop.example:@evil.example",
                                       headers: Self.admin, body: method == "POST" ? Array("{}".utf8) : [])
        expectRefusal(response, field: "Host", rule: "invalid_host", path)
    }

    @Test func theConversionValueIsAnsweredOnlyOnAServedSite() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app.utf8)).status == 201)
        let elsewhere = try ask(endpoint, #"{"app_id":525463029,"first_launch":1762000000}"#, host: "evil.example")
        expectRefusal(elsewhere, rule: "site_not_served", "conversion value on evil.example")
    }

    @Test func aKeyWrittenTwoWaysInAPlistIsStillTwice() throws {
        let endpoint = Self.refusing  // refusals only: nothing it sends changes what the others see
        for second in ["NSAdvertisingAttribution&#x52;eportEndpoint", "<![CDATA[NSAdvertisingAttributionReportEndpoint]]>",
                       "NSAdvertising&#65;ttributionReportEndpoint"] {
            let plist = #"<plist version="1.0"><dict><key>NSAdvertisingAttributionReportEndpoint</key><string>https://app.example</string><key>\#(second)</key><string>https://evil.example</string></dict></plist>"#
            let findings = json(endpoint.request("POST", "/api/plist-check", headers: Self.admin, body: Array(plist.utf8)))["findings"] as? [[String: Any]] ?? []
            #expect(findings.contains { $0["rule"] as? String == "duplicate_key" && $0["key"] as? String == "NSAdvertisingAttributionReportEndpoint" },
                    "\(second)")
        }
    }

    @Test func refusalsNameTheirFieldAndTheRightRule() throws {
        let endpoint = try LiveEndpoint(sites: ["news.example", "app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app.utf8)).status == 201)
        let twice = endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(#"{"app_id":1,"app_id":2}"#.utf8))
        expectRefusal(twice, field: "app_id", rule: "duplicate_key", "a key twice names it")
        let sign = try httpRequest(port: endpoint.port, method: "POST", path: "/.well-known/private-click-measurement/sign-unlinkable-token/",
                                   host: "news.example", body: Array(#"{"version":3,"version":3}"#.utf8))
        expectRefusal(sign, field: "version", rule: "duplicate_key", "sign request")
        endpoint.clock.set("2026-11-25T10:00:00Z")
        for (field, body, rule) in [
            ("conversion_value", #"{"app_id":525463029,"first_launch":1762000000,"conversion_value":9223372036854775808}"#, "out_of_range"),
            ("events.p", #"{"app_id":525463029,"first_launch":1762000000,"events":{"p":-1}}"#, "out_of_range"),
            ("first_launch", #"{"app_id":525463029,"first_launch":1e12}"#, "time_in_the_future"),
            ("first_launch", #"{"app_id":525463029,"first_launch":1e-300}"#, "invalid_time"),
            ("skadnetwork_version", #"{"app_id":525463029,"first_launch":1762000000,"skadnetwork_version":"4.-0"}"#, "unknown_version"),
            ("skadnetwork_version", #"{"app_id":525463029,"first_launch":1762000000,"skadnetwork_version":"04.0"}"#, "unknown_version"),
        ] {
            expectRefusal(try ask(endpoint, body), field: field, rule: rule, body)
        }
        for value in ["%2B525463029", "0525463029", "abc", "-0"] {
            expectRefusal(endpoint.request("DELETE", "/api/apps?app_id=" + value, headers: Self.admin), field: "app_id",
                          rule: "invalid_parameter", "DELETE app_id=\(value)")
        }
        #expect(endpoint.request("DELETE", "/api/apps?app_id=525463029", headers: Self.admin).status == 204)
        let pixel = try httpRequest(port: endpoint.port, method: "GET", path: "/conversion-pixel?conversion=x&site=shop.example:@evil.example",
                                    host: "news.example")
        expectRefusal(pixel, field: "site", rule: "not_registrable_domain", "pixel site")
    }

    @Test(arguments: ["0", "-1", "10000001", "9223372036854775808", "1e3", "abc", ""])
    func theOutboxLimitTakesOnlyASaneNumber(value: String) {
        #expect(throws: (any Error).self, "--apple-ads-max-pending \(value)") {
            guard case .run(let configuration) = try EndpointConfiguration.parse(
                arguments: ["--dev", "--apple-ads-max-pending", value], environment: [:]) else { return }
            try configuration.check()
        }
    }

    @Test func thePostbackWindowsBoundsAreTaken() throws {
        for edge in [10, 365] {
            guard case .run(let c) = try EndpointConfiguration.parse(arguments: ["--dev", "--postback-window-days", String(edge)], environment: [:]) else {
                Issue.record("--postback-window-days \(edge) was not taken")
                continue
            }
            #expect(c.postbackWindowDays == edge)
        }
    }

    @Test(arguments: [("--max-report-bytes", "1099511627776"), ("--max-postback-bytes", "100"), ("--late-cutoff-days", "200000000000"),
                      // A body a log record could not hold beside what is kept with it.
                      ("--max-report-bytes", "98305"), ("--max-postback-bytes", "1048576"),
                      ("--max-connections", "0"), ("--request-timeout", "1e308"), ("--idle-timeout", "-1"),
                      // Shorter than the nine days a device retries, longer than a year, and no number.
                      ("--postback-window-days", "9"), ("--postback-window-days", "366"), ("--postback-window-days", "-12"),
                      ("--postback-window-days", "9223372036854775808"), ("--postback-window-days", "12.5"), ("--postback-window-days", "")])
    func limitsThatWouldTrapOrExhaustAreRefusedAtStart(flag: String, value: String) {
        // (The largest body each takes is taken.)
        #expect(throws: Never.self) {
            guard case .run(let configuration) = try EndpointConfiguration.parse(
                arguments: ["--dev", "--max-postback-bytes", "98304", "--max-report-bytes", "98304"], environment: [:]) else { return }
            try configuration.check()
        }
        #expect(throws: (any Error).self, "\(flag) \(value)") {
            guard case .run(let configuration) = try EndpointConfiguration.parse(arguments: ["--dev", flag, value], environment: [:]) else { return }
            try configuration.check()
            _ = configuration.timingModel
        }
    }
}

