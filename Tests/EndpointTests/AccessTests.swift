import Foundation
import Primitives
import RawHTTPClient
import Testing
@testable import Endpoint

/// Viewer tokens: they read, never write, and a token scoped to an advertiser reads its sites
/// alone on every read path.
@Suite struct AccessTests {
    static let admin = [("Authorization", "Bearer test-token")]

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// SHA-256 by coreutils, an implementation apart from the endpoint's.
    static func sha256sum(_ text: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }

    /// An endpoint serving a publisher (news.example, advertiser "news") and an advertiser with a
    /// shop and an app (shop.example and app.example, advertiser "acme").
    static func endpoint(_ configure: (inout EndpointConfiguration) -> Void = { _ in }) throws -> LiveEndpoint {
        let endpoint = try LiveEndpoint(sites: ["news.example", "shop.example", "app.example"]) { configuration in
            configuration.manualClock = true
            configure(&configuration)
        }
        for body in [#"{"id":"acme","name":"Acme Shoes","sites":["shop.example","app.example"]}"#,
                     #"{"id":"news","name":"News Daily","sites":["news.example"]}"#] {
            let response = endpoint.request("POST", "/api/advertisers", headers: admin, body: Array(body.utf8))
            precondition(response.status == 201, response.bodyText)
        }
        return endpoint
    }

    static func token(_ endpoint: LiveEndpoint, advertiser: String?, label: String = "test") throws -> String {
        try ViewerTokenStore(dataDirectory: endpoint.directory).create(label: label, advertiser: advertiser, now: endpoint.clock.read()).token
    }

    /// The route table walked with a viewer token: every method but reading is 403 with what the
    /// token may do, and reading is never refused for the role. A route added later is walked too.
    @Test func everyWriteIsRefusedToAViewerTokenAndEveryReadIsAllowed() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        for advertiser in [nil, "acme"] {
            let viewer = try Self.token(endpoint, advertiser: advertiser)
            for (path, allow, token) in RouteTableTests.table where token {
                for method in allow.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                    let response = endpoint.request(method, path, headers: Self.bearer(viewer), body: Array("{}".utf8))
                    // An advertiser's own viewer token gives its own spend.
                    let reads = method == "GET" || method == "HEAD" || path == "/api/plist-check" || (path == "/api/spend" && advertiser != nil)
                    if reads {
                        #expect(response.status != 401 && json(response)["rule"] as? String != "viewer_token_read_only", "\(method) \(path)")
                    } else {
                        #expect(response.status == 403, "\(method) \(path) with a viewer token")
                        #expect(json(response)["rule"] as? String == "viewer_token_read_only", "\(method) \(path)")
                        #expect((json(response)["detail"] as? String)?.contains("may read the page, the summaries and the exports") == true)
                        #expect(response.header("Content-Type") == "application/problem+json")
                    }
                }
            }
        }
        // Nothing a viewer sent was written: the registrations are as the admin left them.
        #expect((try JSONSerialization.jsonObject(with: Data(endpoint.get("/api/conversions").body)) as? [Any])?.isEmpty == true)
        let advertisers = try JSONSerialization.jsonObject(with: Data(endpoint.get("/api/advertisers").body)) as? [[String: Any]]
        #expect(advertisers?.compactMap { $0["id"] as? String } == ["acme", "news"])
    }

    /// Over a real socket, as a browser's page asks: the role, then a write refused.
    @Test func theRoleIsToldAndAWriteRefusedOverASocket() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let viewer = try Self.token(endpoint, advertiser: "acme", label: "Acme's dashboard")
        let whoami = try httpRequest(port: endpoint.port, method: "GET", path: "/api/whoami", headers: Self.bearer(viewer))
        #expect(whoami.status == 200)
        #expect(json(whoami)["role"] as? String == "viewer" && json(whoami)["label"] as? String == "Acme's dashboard")
        #expect((json(whoami)["advertiser"] as? [String: Any])?["id"] as? String == "acme")
        #expect(json(whoami)["sites"] as? [String] == ["app.example", "shop.example"])
        let admin = try httpRequest(port: endpoint.port, method: "GET", path: "/api/whoami", headers: Self.admin)
        #expect(json(admin)["role"] as? String == "admin")
        let write = try httpRequest(port: endpoint.port, method: "POST", path: "/admin/clock", headers: Self.bearer(viewer),
                                    body: Array(#"{"now":"2030-01-01T00:00:00Z"}"#.utf8))
        #expect(write.status == 403 && json(write)["rule"] as? String == "viewer_token_read_only")
        #expect(endpoint.clock.read() != Timestamp(rfc3339: "2030-01-01T00:00:00Z"))
    }

    /// A scoped token's every read path holds its advertiser's sites and nothing of the other's.
    @Test func aScopedTokenReadsItsAdvertisersSitesAlone() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        // Each advertiser's registrations name its own: the shop's conversion, the publisher's campaign.
        for (path, body) in [("/api/conversions", #"{"site":"shop.example","name":"purchase","trigger_data":3}"#),
                             ("/api/campaigns", #"{"source_site":"news.example","source_id":40,"destination":"shop.example","name":"Winter sale","starts_at":"2026-11-01T00:00:00Z"}"#)] {
            #expect(endpoint.request("POST", path, headers: Self.admin, body: Array(body.utf8)).status == 201)
        }
        // Triggers and reports: each conversion's two copies, one to the publisher (news) and one
        // to the shop (acme).
        let clock = { (time: String) in
            #expect(endpoint.request("POST", "/admin/clock", headers: Self.admin, body: Array(#"{"now":"\#(time)"}"#.utf8)).status == 200)
        }
        clock("2026-11-20T10:00:00Z")
        for triggerData in [3, 3, 5] {
            _ = endpoint.request("GET", "/.well-known/private-click-measurement/trigger-attribution/0\(triggerData)", host: "shop.example")
        }
        // A day and a half later, as browsers send them.
        clock("2026-11-21T22:00:00Z")
        for (i, triggerData) in [3, 3, 5].enumerated() {
            let body = reportBody(sourceID: 40 + i, triggerData: triggerData)
            #expect(try endpoint.post(body, host: "shop.example").status == 201)
            #expect(try endpoint.post(body, host: "news.example").status == 201)
        }
        // A refusal at each site.
        #expect(try endpoint.post("{", host: "news.example").status == 400)
        #expect(try endpoint.post("[]", host: "shop.example").status == 400)
        let acme = try Self.token(endpoint, advertiser: "acme"), news = try Self.token(endpoint, advertiser: "news")
        let everyone = try Self.token(endpoint, advertiser: nil)

        func rows(_ path: String, _ token: String) -> [[String: Any]] {
            endpoint.request("GET", path, headers: Self.bearer(token)).bodyText.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        #expect(Set(rows("/api/reports", acme).map { $0["site"] as? String }) == ["shop.example"])
        #expect(rows("/api/reports", acme).count == 3 && rows("/api/reports", news).count == 3 && rows("/api/reports", everyone).count == 6)
        #expect(Set(rows("/api/reports", news).map { $0["site"] as? String }) == ["news.example"])
        let csv = endpoint.request("GET", "/api/reports.csv", headers: Self.bearer(acme)).bodyText
        #expect(csv.split(separator: "\r\n").count == 4 && !csv.contains(",news.example,accepted") && !csv.contains("source,news.example"))

        let summary = json(endpoint.request("GET", "/api/summary", headers: Self.bearer(acme)))
        #expect(summary["sites"] as? [String] == ["shop.example"])
        // Counted whatever their verdict (a report this soon after its trigger is quarantined).
        let accepted = summary["accepted"] as? [String: Int] ?? [:], quarantined = summary["quarantined"] as? [String: Int] ?? [:]
        #expect(accepted["source"] == 0 && quarantined["source"] == 0)
        #expect(accepted["destination", default: 0] + quarantined["destination", default: 0] == 3)
        let refused = endpoint.request("GET", "/api/summary?site=news.example", headers: Self.bearer(acme))
        #expect(refused.status == 403 && json(refused)["rule"] as? String == "outside_scope" && json(refused)["field"] as? String == "site")
        #expect(endpoint.request("GET", "/api/summary.csv?site=news.example", headers: Self.bearer(acme)).status == 403)
        let summaryCSV = endpoint.request("GET", "/api/summary.csv", headers: Self.bearer(acme)).bodyText
        #expect(summaryCSV.contains("shop.example,destination") && !summaryCSV.contains("news.example,source"))
        #expect(endpoint.request("GET", "/api/apps/summary?site=news.example", headers: Self.bearer(acme)).status == 403)
        #expect(endpoint.request("GET", "/api/apple-ads/summary?site=news.example", headers: Self.bearer(acme)).status == 403)

        let rejections = json(endpoint.request("GET", "/api/rejections", headers: Self.bearer(acme)))
        let recent = rejections["recent"] as? [[String: Any]] ?? []
        #expect(recent.count == 1 && recent.first?["site"] as? String == "shop.example")
        #expect((rejections["counts"] as? [String: Int])?.values.reduce(0, +) == 1)
        #expect((json(try endpoint.get("/api/rejections"))["recent"] as? [Any])?.count == 2)
        #expect((summary["rejected_by_rule"] as? [[String: Any]])?.compactMap { $0["count"] as? Int }.reduce(0, +) == 1)

        let metrics = endpoint.request("GET", "/metrics", headers: Self.bearer(acme)).bodyText
        #expect(!metrics.contains("news.example") && metrics.contains("site=\"shop.example\",path=\"pcm_reports\""))
        #expect(!metrics.contains("attribution_reports_total"), "a node's totals count every advertiser")
        #expect(try endpoint.get("/metrics").bodyText.contains("site=\"news.example\",path=\"pcm_reports\""))

        let arrivals = json(endpoint.request("GET", "/api/arrivals", headers: Self.bearer(acme)))
        #expect((arrivals["sites"] as? [[String: Any]])?.map { $0["site"] as? String } == ["app.example", "shop.example"])
        let listed = try JSONSerialization.jsonObject(with: Data(endpoint.request("GET", "/api/advertisers", headers: Self.bearer(acme)).body)) as? [[String: Any]]
        #expect(listed?.map { $0["id"] as? String } == ["acme"])
        #expect(endpoint.request("GET", "/api/ad-networks", headers: Self.bearer(acme)).status == 403)
        #expect(endpoint.request("GET", "/api/ad-networks", headers: Self.bearer(everyone)).status == 200)
        // `?advertiser=` narrows any token's reading to that advertiser's sites, on every read path.
        #expect(try endpoint.export("?advertiser=acme").count == 3 && endpoint.export("?advertiser=news&from=2026-11-20").count == 3)
        #expect(try json(endpoint.get("/api/summary?advertiser=news"))["sites"] as? [String] == ["news.example"])
        #expect(rows("/api/reports?advertiser=acme", acme).count == 3)
        for path in ["/api/reports", "/api/summary", "/api/apps/summary", "/api/rejections", "/metrics", "/api/arrivals", "/api/overview"] {
            let other = endpoint.request("GET", path + "?advertiser=news", headers: Self.bearer(acme))
            #expect(other.status == 403 && json(other)["field"] as? String == "advertiser", "\(path)")
            let unknown = try endpoint.get(path + "?advertiser=nobody")
            #expect(unknown.status == 404 && json(unknown)["rule"] as? String == "unknown_advertiser", "\(path)")
        }
        // Names are shown to the parties they concern (`NameDisclosure`): the publisher's copies
        // name no conversion of the shop's; the shop's copies name the campaign bought for the
        // shop; the admin sees both. NameDisclosureTests walks every path.
        func names(_ token: String, _ list: String, _ key: String) -> Set<String> {
            Set((json(endpoint.request("GET", "/api/summary", headers: Self.bearer(token)))[list] as? [[String: Any]] ?? []).compactMap { $0[key] as? String })
        }
        #expect(names(news, "by_conversion", "conversion").isEmpty && names(news, "by_campaign", "campaign") == ["Winter sale"])
        #expect(names(acme, "by_conversion", "conversion") == ["purchase"] && names(acme, "by_campaign", "campaign") == ["Winter sale"])
        #expect(names(everyone, "by_conversion", "conversion") == ["purchase"] && names(everyone, "by_campaign", "campaign") == ["Winter sale"])
        #expect(endpoint.request("GET", "/api/summary/crosstab.csv", headers: Self.bearer(acme)).bodyText.contains("Winter sale"))
        #expect(!endpoint.request("GET", "/api/summary.csv", headers: Self.bearer(news)).bodyText.contains("purchase"))
        // A scoped token's Info.plist check knows its own sites, not the others served here.
        let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>NSAdvertisingAttributionReportEndpoint</key><string>https://shop.example</string></dict></plist>"#
        let checked = endpoint.request("POST", "/api/plist-check", headers: Self.bearer(news), body: Array(plist.utf8)).bodyText
        #expect(!checked.contains("app.example") && checked.contains("news.example"), "\(checked)")
        // Another id is refused to a scoped token whether it exists or not.
        #expect(endpoint.request("GET", "/api/summary?advertiser=nobody", headers: Self.bearer(acme)).status == 403)
        let keys = json(endpoint.request("GET", "/api/token-keys", headers: Self.bearer(acme)))
        #expect(Set((keys["keys"] as? [[String: Any]] ?? []).compactMap { $0["site"] as? String }).isSubset(of: ["shop.example", "app.example"]))
        #expect((keys["next_keys"] as? [String: Any])?.keys.contains("news.example") == false)
    }

    /// The token file holds hashes only, 0600; a revoked token stops working at the next request,
    /// with no restart; one whose advertiser is gone reads nothing.
    @Test func tokensAreHashedAtRestAndRevokedAtOnce() throws {
        let endpoint = try Self.endpoint()
        var stopped = false
        defer { if !stopped { endpoint.stop() } }
        let made = try runEndpoint(["viewer-token", "add", "--label", "Acme's client", "--advertiser", "acme", "--data", endpoint.directory])
        #expect(made.status == 0)
        let token = try #require(made.output.split(separator: "\n").map(String.init).first { $0.hasPrefix("vt_") })
        let path = endpoint.directory + "/viewer-tokens.json"
        let file = try String(contentsOfFile: path, encoding: .utf8)
        let hash = try Self.sha256sum(token)
        #expect(!file.contains(String(token.suffix(64))) && hash.count == 64 && file.contains(hash))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(endpoint.request("GET", "/api/summary", headers: Self.bearer(token)).status == 200)

        let id = String(token.dropFirst(3).prefix(8))
        #expect(try runEndpoint(["viewer-token", "list", "--data", endpoint.directory]).output.contains("\(id) acme"))
        #expect(try runEndpoint(["viewer-token", "revoke", id, "--data", endpoint.directory]).status == 0)
        #expect(endpoint.request("GET", "/api/summary", headers: Self.bearer(token)).status == 401)
        #expect(try runEndpoint(["viewer-token", "revoke", id, "--data", endpoint.directory]).status == 2)
        #expect(try runEndpoint(["viewer-token", "add", "--label", "x", "--advertiser", "nobody", "--data", endpoint.directory]).status == 2)

        // An advertiser with tokens cannot be removed: they would read whoever is registered under
        // its id next. Removed behind the endpoint's back (the file edited between two starts),
        // its tokens read nothing.
        let orphan = try Self.token(endpoint, advertiser: "news")
        let kept = endpoint.request("DELETE", "/api/advertisers?id=news", headers: Self.admin)
        #expect(kept.status == 409 && json(kept)["rule"] as? String == "advertiser_has_tokens")
        endpoint.stop()
        stopped = true
        let registered = endpoint.directory + "/advertisers.json"
        let edited = try String(contentsOfFile: registered, encoding: .utf8).replacingOccurrences(of: "\"news\"", with: "\"gone\"")
        try edited.write(toFile: registered, atomically: true, encoding: .utf8)
        let restarted = try LiveEndpoint(sites: ["news.example", "shop.example", "app.example"], directory: endpoint.directory)
        defer { restarted.stop() }
        let gone = restarted.request("GET", "/api/reports", headers: Self.bearer(orphan))
        #expect(gone.status == 403 && json(gone)["rule"] as? String == "advertiser_unknown")
    }

    /// What a stranger can put in the header: none of it is a token, none of it traps.
    @Test func malformedTokensAre401() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let real = try Self.token(endpoint, advertiser: nil)
        let id = String(real.dropFirst(3).prefix(8))
        let forged = "vt_\(id)_" + String(repeating: "0", count: 64)
        let attempts = [forged, "vt_", "vt_\(id)", "vt_\(id)_", real + "0", String(real.dropLast()), real.uppercased(),
                        "vt_\(id)_" + String(repeating: "g", count: 64), "vt_zzzzzzzz_" + String(real.suffix(64)),
                        String(repeating: "v", count: 60_000), "test-token ", " test-token", "\u{00e9}\u{00e9}", "vt_\(id)_\(id)"]
        for attempt in attempts {
            let response = endpoint.request("GET", "/api/summary", headers: Self.bearer(attempt))
            #expect(response.status == 401, "\(attempt.prefix(80))")
        }
        #expect(endpoint.request("GET", "/api/summary", headers: [("Authorization", "Basic " + real)]).status == 401)
        #expect(endpoint.request("GET", "/api/summary", headers: [("Authorization", "bearer " + real)]).status == 200)
        // A token file damaged on disk keeps no token working, and the endpoint answers.
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: endpoint.directory + "/viewer-tokens.json"))
        #expect(endpoint.request("GET", "/api/summary", headers: Self.bearer(real)).status == 401)
        #expect(try endpoint.get("/api/summary").status == 200)
    }

    /// Advertisers follow the rules of every registration, and one site has one advertiser.
    @Test func advertiserRegistrationsFollowTheRules() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let cases: [(String, Int, String, String?)] = [
            (#"{"id":"acme","name":"Again","sites":["news.example"]}"#, 409, "site_owned", "sites[0]"),
            (#"{"id":"other","name":"Other","sites":["shop.example"]}"#, 409, "site_owned", "sites[0]"),
            (#"{"id":"acme","name":"Acme","sites":["app.example"]}"#, 409, "duplicate_advertiser", "id"),
            (#"{"id":"elsewhere","name":"Elsewhere","sites":["elsewhere.example"]}"#, 422, "site_not_served", "sites[0]"),
            (#"{"id":"Acme","name":"x","sites":["shop.example"]}"#, 422, "invalid_id", "id"),
            (#"{"id":"-a","name":"x","sites":["shop.example"]}"#, 422, "invalid_id", "id"),
            (#"{"id":"a/b","name":"x","sites":["shop.example"]}"#, 422, "invalid_id", "id"),
            (#"{"id":"\#(String(repeating: "a", count: 65))","name":"x","sites":["shop.example"]}"#, 422, "invalid_id", "id"),
            (#"{"id":"new","name":"","sites":["x.example"]}"#, 422, "invalid_name", "name"),
            (#"{"id":"new","name":"a\nb","sites":["x.example"]}"#, 422, "invalid_name", "name"),
            (#"{"id":"new","name":"x","sites":[]}"#, 422, "out_of_range", "sites"),
            (#"{"id":"new","name":"x","sites":["Shop.example"]}"#, 422, "not_registrable_domain", "sites[0]"),
            (#"{"id":"new","name":"x","sites":["www.shop.example"]}"#, 422, "not_registrable_domain", "sites[0]"),
            (#"{"id":"new","name":"x","sites":["a.example","a.example"]}"#, 422, "duplicate_site", "sites[1]"),
            (#"{"id":"new","name":"x","sites":"a.example"}"#, 422, "wrong_type", "sites"),
            (#"{"id":"new","name":"x","sites":[1]}"#, 422, "wrong_type", "sites[0]"),
            (#"{"id":"new","name":"x"}"#, 422, "missing_field", "sites"),
            (#"{"id":"new","name":"x","sites":["a.example"],"extra":1}"#, 422, "unknown_field", "extra"),
            (#"[]"#, 400, "not_an_object", nil),
            (#"{"id":7,"name":"x","sites":["a.example"]}"#, 422, "wrong_type", "id"),
        ]
        for (body, status, rule, field) in cases {
            let response = endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: Array(body.utf8))
            #expect(response.status == status, "\(body)")
            #expect(json(response)["rule"] as? String == rule && json(response)["field"] as? String == field, "\(body): \(response.bodyText)")
        }
        let many = (0...100).map { "\"s\($0).example\"" }.joined(separator: ",")
        let tooMany = endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: Array(#"{"id":"many","name":"x","sites":[\#(many)]}"#.utf8))
        #expect(tooMany.status == 422 && json(tooMany)["rule"] as? String == "out_of_range")
        #expect(endpoint.request("DELETE", "/api/advertisers?id=nobody", headers: Self.admin).status == 404)
        #expect(endpoint.request("DELETE", "/api/advertisers", headers: Self.admin).status == 400)
        #expect(endpoint.request("DELETE", "/api/advertisers?id=acme&x=1", headers: Self.admin).status == 400)
        let listed = try JSONSerialization.jsonObject(with: Data(endpoint.get("/api/advertisers").body)) as? [[String: Any]]
        #expect(listed?.compactMap { $0["id"] as? String } == ["acme", "news"])
    }
}
