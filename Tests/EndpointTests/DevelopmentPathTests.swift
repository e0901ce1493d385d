import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// Each app's development path and the setup view: a secret URL whose postbacks are verified with
/// Apple's development keys, kept apart and never counted; rotation, hostile paths and bodies,
/// Apple's samples sent through it, and a restart.
@Suite struct DevelopmentPathTests {
    static let admin = [("Authorization", "Bearer test-token")]
    /// Apple's postback from a device's Developer settings (`apple-development-identifier/1`).
    static func developerSettingsSample() throws -> [UInt8] {
        let document = try PostbackPathTests.vectors("adattributionkit_postbacks")
        let entry = document["apple_doc_developer_settings"] as! [String: Any]
        return Array(try JSONSerialization.data(withJSONObject: entry["body"]!))
    }
    /// The app Apple's sample names (`advertised-item-identifier`).
    static let sampleApp = AppsTests.app.replacingOccurrences(of: "1000000003", with: "10738027756")

    func device(_ endpoint: LiveEndpoint, _ path: String, _ body: [UInt8], host: String = "app.example") throws -> RawResponse {
        try httpRequest(port: endpoint.port, method: "POST", path: path, host: host, headers: [("Content-Type", "application/json")], body: body)
    }

    func setup(_ endpoint: LiveEndpoint) throws -> [String: Any] {
        let apps = try #require(json(try endpoint.get("/api/apps/setup?app_id=10738027756"))["apps"] as? [[String: Any]])
        return try #require(apps.first)
    }

    @Test func aDevelopmentPostbackIsVerifiedKeptApartAndShownOnTheSetupView() throws {
        let directory = temporaryDirectory()
        var endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.sampleApp.utf8)).status == 201)
        // Nothing yet: the view says what to do first.
        var view = try setup(endpoint)
        #expect((view["development_path"] as? [String: Any])?["enabled"] as? Bool == false)
        #expect((view["next_steps"] as? [String] ?? []).contains { $0.contains("development URL") })

        let made = endpoint.request("POST", "/api/apps/development-path?app_id=10738027756", headers: Self.admin)
        #expect(made.status == 201, "\(made.bodyText)")
        let path = try #require(json(made)["path"] as? String)
        #expect(path.hasPrefix("/development-postbacks/") && path.count == "/development-postbacks/".count + 33)
        #expect(json(made)["url"] as? String == "https://app.example" + path)

        let sample = try Self.developerSettingsSample()
        let stored = try device(endpoint, path, sample)
        #expect(stored.status == 200, "\(stored.bodyText)")
        #expect(json(stored)["signature"] as? String == "apple_development")
        // With a postback path appended, as "Use Developer Postback URL" may write it.
        #expect(try device(endpoint, path + ".well-known/appattribution/report-attribution/", sample).status == 200)

        view = try setup(endpoint)
        let kept = try #require(view["development_postbacks"] as? [String: Any])
        #expect(kept["kept"] as? Int == 2)
        let last = try #require(kept["last"] as? [String: Any])
        #expect(last["path"] as? String == "development")
        let inspection = try #require(last["inspection"] as? [String: Any])
        #expect((inspection["signature"] as? [String: Any])?["outcome"] as? String == "apple_development")
        #expect((inspection["app"] as? [String: Any])?["name"] as? String == "Example Game")
        #expect((view["next_steps"] as? [String] ?? []).contains { $0.contains("arrive and verify") })
        // The URL is the admin's: a secret.
        #expect(((view["development_path"] as? [String: Any])?["url"] as? String)?.hasSuffix(path) == true)

        // Never in production: no postback stored, none counted.
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
        let apps = json(try endpoint.get("/api/apps/summary?from=2026-11-20&to=2026-11-20"))
        #expect((apps["postbacks"] as? [String: Any])?["stored"] as? Int == 0)

        // Kept across a restart.
        endpoint.stop()
        endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory)
        defer { endpoint.stop() }
        #expect(((try setup(endpoint))["development_postbacks"] as? [String: Any])?["kept"] as? Int == 2)
        #expect(try device(endpoint, path, sample).status == 200)

        // Rotated: the old secret is no one's at once.
        let rotated = endpoint.request("POST", "/api/apps/development-path?app_id=10738027756", headers: Self.admin)
        let newPath = try #require(json(rotated)["path"] as? String)
        #expect(newPath != path)
        #expect(try device(endpoint, path, sample).status == 404)
        #expect(try device(endpoint, newPath, sample).status == 200)
        // Apple's samples, through the path: every one verifies.
        let samples = endpoint.request("POST", "/api/apps/development-path/samples?app_id=10738027756", headers: Self.admin)
        #expect(samples.status == 200, "\(samples.bodyText)")
        let sent = try #require(json(samples)["sent"] as? [[String: Any]])
        #expect(sent.count == 6 && sent.allSatisfy { ["apple", "apple_development"].contains($0["signature"] as? String ?? "") }, "\(sent)")
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
        // Removed: nothing is taken there.
        #expect(endpoint.request("DELETE", "/api/apps/development-path?app_id=10738027756", headers: Self.admin).status == 204)
        #expect(try device(endpoint, newPath, sample).status == 404)
        #expect(endpoint.request("DELETE", "/api/apps/development-path?app_id=10738027756", headers: Self.admin).status == 404)
    }

    /// A development-signed copy on the production path keeps today's treatment (stored,
    /// quarantined) and shows on the setup view too.
    @Test func aDevelopmentCopyOnTheProductionPathAlsoShowsOnTheSetupView() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.sampleApp.utf8)).status == 201)
        let response = try device(endpoint, PostbackPathTests.adattributionkit, try Self.developerSettingsSample())
        #expect(response.status == 200 && json(response)["verdict"] as? String == "quarantined")
        endpoint.server.developmentPostbacks.drain()
        let last = try #require(((try setup(endpoint))["development_postbacks"] as? [String: Any])?["last"] as? [String: Any])
        #expect(last["path"] as? String == "production")
        #expect(((last["inspection"] as? [String: Any])?["seen"] as? [String: Any])?["stored"] as? Bool == true)
    }

    /// Guesses, odd paths, floods and junk: a clear 4xx, never a 5xx, and the kept list stays bounded.
    @Test func hostileRequestsAreRefusedAndNothingGrowsWithoutBound() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.sampleApp.utf8)).status == 201)
        let path = try #require(json(endpoint.request("POST", "/api/apps/development-path?app_id=10738027756", headers: Self.admin))["path"] as? String)
        let secret = String(path.dropFirst("/development-postbacks/".count).dropLast())
        let sample = try Self.developerSettingsSample()
        let guesses = ["/development-postbacks/", "/development-postbacks//", "/development-postbacks/" + secret.uppercased() + "/",
                       "/development-postbacks/" + String(secret.dropLast()) + "/", "/development-postbacks/" + secret + "0/",
                       "/development-postbacks/" + String(repeating: "0", count: 32) + "/",
                       "/development-postbacks/" + secret + "/../../api/apps", "/development-postbacks/" + secret + "/.well-known/private-click-measurement/report-attribution/",
                       "/development-postbacks/" + secret + "%2F", "/development-postbacks/" + String(repeating: "a", count: 5000)]
        for guess in guesses {
            let response = try device(endpoint, guess, sample)
            #expect([400, 404].contains(response.status), "\(guess.prefix(80)): \(response.status)")
        }
        #expect(try device(endpoint, path, sample, host: "elsewhere.example").status == 421)
        for (body, status) in [([UInt8](), 400), (Array("junk".utf8), 400), (Array("{}".utf8), 400),
                               ([UInt8](repeating: 0x41, count: 100_000), 413)] {
            #expect(try device(endpoint, path, body).status == status)
        }
        // A SKAdNetwork body sent to the AdAttributionKit path after the secret: read as that path's.
        let skadnetwork = Array(ApplesSamplePostbacks.all[0].body.utf8)
        #expect(try device(endpoint, path + ".well-known/appattribution/report-attribution/", skadnetwork).status == 400)
        // A flood: answered each time, at most 50 kept.
        for _ in 0..<80 { #expect(try device(endpoint, path, sample).status == 200) }
        #expect(((try setup(endpoint))["development_postbacks"] as? [String: Any])?["kept"] as? Int == DevelopmentPostbacks.perApp)
        // The admin calls: named, numeric ids only.
        for query in ["", "?app_id=", "?app_id=abc", "?app_id=-1", "?app_id=042", "?app_id=99999999999999999999", "?app_id=1&x=2"] {
            let response = endpoint.request("POST", "/api/apps/development-path" + query, headers: Self.admin)
            #expect(response.status == 400, "\(query): \(response.status)")
        }
        #expect(endpoint.request("POST", "/api/apps/development-path?app_id=5", headers: Self.admin).status == 404)
        #expect(endpoint.request("POST", "/api/apps/development-path?app_id=10738027756").status == 401)
    }

    /// The samples the replay tool sends are the vectors' copies of Apple's own, byte for byte in meaning.
    @Test func theSamplesAreApplesVectors() throws {
        let skadnetwork = try PostbackPathTests.vectors("skadnetwork_postbacks")
        let adattributionkit = try PostbackPathTests.vectors("adattributionkit_postbacks")
        for sample in ApplesSamplePostbacks.all {
            let vector = try #require((skadnetwork[sample.name] as? [String: Any])?["postback"] ?? (adattributionkit[sample.name] as? [String: Any])?["body"],
                                      "\(sample.name) is no vector")
            let mine = try JSONSerialization.jsonObject(with: Data(sample.body.utf8)) as! NSDictionary
            #expect(mine == vector as! NSDictionary, "\(sample.name)")
            let entry = (skadnetwork[sample.name] ?? adattributionkit[sample.name]) as! [String: Any]
            #expect(entry["expect_valid"] as? Bool == true, "\(sample.name) verifies")
        }
    }

    /// `attribution-endpoint send-samples`, over real HTTP: every sample through the app's
    /// development URL; usage and an endpoint that is not there are said so.
    @Test func theSendSamplesCommandSendsApplesSamples() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.sampleApp.utf8)).status == 201)
        let path = try #require(json(endpoint.request("POST", "/api/apps/development-path?app_id=10738027756", headers: Self.admin))["path"] as? String)
        let url = "http://127.0.0.1:\(endpoint.port)" + path
        #expect(SendSamplesCommand.main(arguments: [url, "--host", "app.example"], environment: [:]) == 0)
        #expect(((try setup(endpoint))["development_postbacks"] as? [String: Any])?["kept"] as? Int == ApplesSamplePostbacks.all.count)
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
        // Another host is not served: every sample refused, and the command says so.
        #expect(SendSamplesCommand.main(arguments: [url, "--host", "elsewhere.example"], environment: [:]) == 1)
        #expect(SendSamplesCommand.main(arguments: [], environment: [:]) == 64)
        #expect(SendSamplesCommand.main(arguments: ["ftp://x/"], environment: [:]) == 64)
        #expect(SendSamplesCommand.main(arguments: ["http://127.0.0.1:9/development-postbacks/x/"], environment: [:]) == 1)
    }

    /// What a development postback names is read through what the token may see: a viewer of one
    /// advertiser learns nothing of another's app, schema or ledger through the setup view; an
    /// app removed keeps no working development path.
    @Test func theSetupViewShowsAViewerOnlyItsOwn() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        let other = AppsTests.app.replacingOccurrences(of: "1000000003", with: "2000000001").replacingOccurrences(of: "app.example", with: "news.example")
            .replacingOccurrences(of: "Example Game", with: "News Reader")
        for app in [Self.sampleApp, other] {
            #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(app.utf8)).status == 201)
        }
        let path = try #require(json(endpoint.request("POST", "/api/apps/development-path?app_id=10738027756", headers: Self.admin))["path"] as? String)
        // A body naming the other advertiser's app, its value meaningful in that app's schema.
        let body = #"{"version":"4.0","ad-network-id":"x.skadnetwork","transaction-id":"t-1","attribution-signature":"x","app-id":2000000001,"conversion-value":5}"#
        #expect(try device(endpoint, path, Array(body.utf8)).status == 200)
        let viewer = try AccessTests.token(endpoint, advertiser: "acme")
        let seenByViewer = json(endpoint.request("GET", "/api/apps/setup?app_id=10738027756", headers: [("Authorization", "Bearer \(viewer)")]))
        let viewerApps = try #require(seenByViewer["apps"] as? [[String: Any]], "\(seenByViewer)")
        let viewerLast = try #require((viewerApps.first?["development_postbacks"] as? [String: Any])?["last"] as? [String: Any])
        let inspection = try #require(viewerLast["inspection"] as? [String: Any])
        #expect((inspection["app"] as? [String: Any])?["name"] is NSNull && (inspection["app"] as? [String: Any])?["registered"] as? Bool == false)
        #expect((inspection["conversion_value"] as? [String: Any])?["meaning"] is NSNull)
        #expect(inspection["seen"] is NSNull && inspection["duplicate_key"] is NSNull, "the ledger is the admin's")
        // The other advertiser's app is not in the viewer's list at all.
        #expect(endpoint.request("GET", "/api/apps/setup?app_id=2000000001", headers: [("Authorization", "Bearer \(viewer)")]).status == 404)
        // The admin sees what it names.
        let adminView = json(try endpoint.get("/api/apps/setup?app_id=10738027756"))
        let adminApps = try #require(adminView["apps"] as? [[String: Any]])
        let adminLast = try #require((adminApps.first?["development_postbacks"] as? [String: Any])?["last"] as? [String: Any])
        let seenByAdmin = try #require(adminLast["inspection"] as? [String: Any])
        #expect((seenByAdmin["app"] as? [String: Any])?["name"] as? String == "News Reader" && seenByAdmin["seen"] is [String: Any])
        // An app removed: its development URL takes nothing more.
        #expect(endpoint.request("DELETE", "/api/apps?app_id=10738027756", headers: Self.admin).status == 204)
        #expect(try device(endpoint, path, Array(body.utf8)).status == 404)
    }

    /// The setup view's and the names' parameters and refusals: a clear 4xx for every odd
    /// `app_id`, samples before a URL, a refresh with nothing configured, a scoped viewer asking
    /// for the ad account's names.
    @Test func theSetupAndNamesCallsRefuseOddRequestsClearly() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.sampleApp.utf8)).status == 201)
        for query in ["?app_id=", "?app_id=abc", "?app_id=-1", "?app_id=042", "?app_id=+5", "?app_id=99999999999999999999",
                      "?app_id=1e3", "?app_id=%00", "?app_id=10738027756&x=1"] {
            let response = try endpoint.get("/api/apps/setup" + query)
            #expect(response.status == 400, "\(query): \(response.status)")
            #expect(json(response)["field"] != nil, "\(query): the refusal names its field")
        }
        #expect(try endpoint.get("/api/apps/setup?app_id=5").status == 404)
        #expect(try endpoint.get("/api/apps/setup?app_id=10738027756&advertiser=acme").status == 200)
        let samples = endpoint.request("POST", "/api/apps/development-path/samples?app_id=10738027756", headers: Self.admin)
        #expect(samples.status == 409 && json(samples)["rule"] as? String == "no_development_path")
        let refresh = endpoint.request("POST", "/api/apple-ads/names/refresh", headers: Self.admin)
        #expect(refresh.status == 409 && json(refresh)["rule"] as? String == "apple_ads_platform_not_configured")
        #expect(json(try endpoint.get("/api/apple-ads/names"))["configured"] as? Bool == false)
        let viewer = try AccessTests.token(endpoint, advertiser: "acme")
        #expect(endpoint.request("GET", "/api/apple-ads/names", headers: [("Authorization", "Bearer \(viewer)")]).status == 403)
        #expect(endpoint.request("POST", "/api/apple-ads/names/refresh", headers: [("Authorization", "Bearer \(viewer)")]).status == 403)
    }
}
