import Dispatch
import Foundation
import HTTPServer
import Locking
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// Relays through the whole endpoint: destinations registered through the admin API, postbacks
/// sent to the real paths, and a real receiver on loopback that keeps what it is sent.
@Suite struct RelayEndpointTests {
    static let admin = [("Authorization", "Bearer test-token")]
    static let appID = DemoPostbacks.appID
    static func app(_ id: Int) -> String {
        #"{"app_id":\#(id),"site":"app.example","name":"Relayed","schema":{"fine":[{"from":0,"to":63,"meaning":"levels","events":["level"]}]}}"#
    }

    /// An HTTP receiver on loopback that answers 200 and keeps every request's body and headers.
    final class Receiver: HTTPHandler, Sendable {
        struct Delivery: Sendable {
            var body: [UInt8]
            var headers: [String: String]
        }
        let received = Locked<[Delivery]>([])
        /// Signalled at each delivery received.
        let arrivals = TurnSignal()
        private let delay: Double
        private let server = Locked<HTTPServer?>(nil)
        private let address = Locked("")
        var url: String { address.withLock { $0 } }

        /// `delay`: seconds each answer waits, on a thread of its own. `port`: 0 for any.
        init(delay: Double = 0, port: UInt16 = 0) throws {
            self.delay = delay
            var configuration = HTTPServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = port
            configuration.accessLog = nil
            let server = HTTPServer(configuration: configuration, handler: Forward(receiver: self))
            let port = try server.start()
            self.server.withLock { $0 = server }
            address.withLock { $0 = "http://127.0.0.1:\(port)/copies" }
        }

        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.lowercased()] = field.value }
            received.withLock { $0.append(Delivery(body: request.body, headers: headers)) }
            arrivals.signal()
            guard delay > 0 else { return responder.respond(HTTPResponse(status: 200)) }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { responder.respond(HTTPResponse(status: 200)) }
        }

        func stop() {
            let server = server.withLock { $0 }
            server?.shutdown()
            server?.waitUntilStopped()
        }

        /// Holds the receiver weakly: the server must not keep it alive.
        private struct Forward: HTTPHandler {
            weak var receiver: Receiver?
            func handle(_ request: HTTPRequest, responder: HTTPResponder) { receiver?.handle(request, responder: responder) }
        }
    }

    static func start(_ directory: String = temporaryDirectory()) throws -> LiveEndpoint {
        try LiveEndpoint(sites: ["app.example"], directory: directory) { c in
            c.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)]
        }
    }

    static func register(_ endpoint: LiveEndpoint, name: String, url: String, appID: Int, extra: String = "") -> RawResponse {
        endpoint.request("POST", "/api/relays", headers: admin, body: Array(
            #"{"name":"\#(name)","url":"\#(url)","app_id":\#(appID),"protocols":["adattributionkit"],"internal":true\#(extra)}"#.utf8))
    }

    static func send(_ endpoint: LiveEndpoint, _ body: [UInt8], contentType: String = "application/json; charset=utf-8") -> RawResponse {
        endpoint.request("POST", PostbackWindowTests.path, host: "app.example", headers: [("Content-Type", contentType)], body: body)
    }

    @Test func acceptedCopiesReachTheirAppsDestinationByteForByteAndNoOther() throws {
        let partner = try Receiver(), other = try Receiver()
        defer { partner.stop(); other.stop() }
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(RelayEndpointTests.app(RelayEndpointTests.appID).utf8)).status == 201)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app(111).utf8)).status == 201)
        let registered = Self.register(endpoint, name: "partner", url: partner.url, appID: Self.appID,
                                       extra: #","secret":"0123456789abcdef0123456789abcdef""#)
        #expect(registered.status == 201, "\(registered.bodyText)")
        #expect(!registered.bodyText.contains("0123456789abcdef"), "the secret is never shown back")
        #expect(Self.register(endpoint, name: "other", url: other.url, appID: 111).status == 201)

        var sent: [[UInt8]] = []
        for n in 0..<5 {
            let body = PostbackWindowTests.postback(700 + n)
            #expect(Self.send(endpoint, body).status == 200)
            sent.append(body)
        }
        // A device's retry of the first: stored as a retry, not a second copy.
        #expect(Self.send(endpoint, sent[0]).status == 200)
        // A forgery (its signature broken): quarantined, and this destination takes accepted copies only.
        var forged = PostbackWindowTests.postback(799)
        // The signature's first character, changed to another base64url one: the JWS still reads.
        if let dot = forged.lastIndex(of: UInt8(ascii: ".")) {
            let at = forged.index(after: dot)
            forged[at] = forged[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        }
        #expect(Self.send(endpoint, forged).status == 200)

        #expect(endpoint.relayTurns.until { partner.received.withLock { $0.count } >= 5 })
        // The turn that sent them has ended (its cursor saved and counted), and nothing is left to send.
        #expect(endpoint.relayTurns.until {
            endpoint.server.relays.statuses.first { $0.name == "partner" }?.delivered == 5 && endpoint.server.relays.statuses.allSatisfy { !$0.retrying }
        })
        let received = partner.received.withLock { $0 }
        // (Several go at once: they leave in the order received, and may arrive in another.)
        #expect(received.count == 5 && Set(received.map(\.body)) == Set(sent), "each accepted copy once, byte for byte")
        #expect(received.allSatisfy { $0.headers["content-type"] == "application/json; charset=utf-8" })
        #expect(received.allSatisfy { $0.headers["x-attribution-protocol"] == "adattributionkit" })
        #expect(Set(received.compactMap { $0.headers["x-attribution-delivery"] }).count == 5)
        #expect(received.allSatisfy { $0.headers["x-attribution-signature"]?.hasPrefix("t=") == true })
        #expect(other.received.withLock { $0.isEmpty }, "another app's destination got nothing")

        let listed = endpoint.request("GET", "/api/relays", headers: Self.admin).bodyText
        #expect(listed.contains(#""delivered":5"#) && !listed.contains("0123456789abcdef"), "\(listed)")
        let metrics = endpoint.request("GET", "/metrics", headers: Self.admin).bodyText
        #expect(metrics.contains(#"attribution_relay_copies_delivered_total{destination="partner"} 5"#))
    }

    static func listed(_ endpoint: LiveEndpoint, _ name: String) -> [String: Any] {
        let all = (try? JSONSerialization.jsonObject(with: Data(endpoint.request("GET", "/api/relays", headers: admin).body))) as? [String: Any]
        return ((all?["destinations"] as? [[String: Any]]) ?? []).first { ($0["destination"] as? [String: Any])?["name"] as? String == name } ?? [:]
    }

    /// A development URL's postbacks go only to a destination that asked for development ones;
    /// the production postbacks' destination, and a relay of another app, get nothing of them.
    @Test func developmentPathPostbacksGoOnlyWhereAsked() throws {
        let asking = try Receiver(), production = try Receiver(), other = try Receiver()
        defer { asking.stop(); production.stop(); other.stop() }
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app(Self.appID).utf8)).status == 201)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app(111).utf8)).status == 201)
        #expect(Self.register(endpoint, name: "asking", url: asking.url, appID: Self.appID, extra: #","development":true"#).status == 201)
        #expect(Self.register(endpoint, name: "production", url: production.url, appID: Self.appID).status == 201)
        #expect(Self.register(endpoint, name: "other", url: other.url, appID: 111, extra: #","development":true"#).status == 201)
        let path = try #require(json(endpoint.request("POST", "/api/apps/development-path?app_id=\(Self.appID)", headers: Self.admin))["path"] as? String)
        let sample = try DevelopmentPathTests.developerSettingsSample()
        let taken = try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example",
                                    headers: [("Content-Type", "application/json")], body: sample)
        #expect(taken.status == 200, "\(taken.bodyText)")
        // A production postback after it, so that every destination has had a turn past the development one.
        #expect(Self.send(endpoint, PostbackWindowTests.postback(900)).status == 200)
        #expect(endpoint.relayTurns.until {
            let statuses = endpoint.server.relays.statuses
            return statuses.first { $0.name == "asking" }?.delivered == 2 && statuses.first { $0.name == "production" }?.delivered == 1
                && statuses.allSatisfy { !$0.retrying }
        })
        #expect(asking.received.withLock { $0.map(\.body) }.contains(sample), "the development postback, byte for byte")
        #expect(!production.received.withLock { $0.map(\.body) }.contains(sample), "not to a destination that did not ask")
        #expect(other.received.withLock { $0.isEmpty }, "nor to another app's")
        // Never among the production postbacks.
        #expect(try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").count == 1)
    }

    @Test func aReplaySendsAPeriodAgainWithTheFirstDeliveryIDsAndItsRequestIsChecked() throws {
        let partner = try Receiver()
        defer { partner.stop() }
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app(Self.appID).utf8)).status == 201)
        #expect(Self.register(endpoint, name: "partner", url: partner.url, appID: Self.appID).status == 201)
        for n in 0..<3 { #expect(Self.send(endpoint, PostbackWindowTests.postback(820 + n)).status == 200) }
        #expect(endpoint.relayTurns.until { endpoint.server.relays.statuses.first?.delivered == 3 })
        // The harness's clock reads 2026-11-20T10:00Z: the copies arrived that day.
        let replay = endpoint.request("POST", "/api/relays/replay?name=partner&from=2026-11-20&to=2026-11-20", headers: Self.admin)
        #expect(replay.status == 200, "\(replay.bodyText)")
        #expect(endpoint.relayTurns.until { partner.received.withLock { $0.count } == 6 && Self.listed(endpoint, "partner")["replay"] == nil })
        let received = partner.received.withLock { $0 }
        #expect(received.suffix(3).map(\.body) == received.prefix(3).map(\.body))
        #expect(received.suffix(3).map { $0.headers["x-attribution-delivery"] } == received.prefix(3).map { $0.headers["x-attribution-delivery"] },
                "a replayed copy carries its first delivery id")
        // A period with nothing in it ends with nothing sent.
        #expect(endpoint.request("POST", "/api/relays/replay?name=partner&since=2026-11-21T00:00:00Z&until=2026-11-22T00:00:00Z", headers: Self.admin).status == 200)
        #expect(endpoint.relayTurns.until { Self.listed(endpoint, "partner")["replay"] == nil })
        #expect(partner.received.withLock { $0.count } == 6)
        // One at a time: a second waits for the first, which an admin can end.
        #expect(endpoint.request("POST", "/api/relays/pause?name=partner", headers: Self.admin).status == 200)
        #expect(endpoint.request("POST", "/api/relays/replay?name=partner&from=2026-11-01", headers: Self.admin).status == 200)
        let listed = Self.listed(endpoint, "partner")
        #expect(listed["state"] as? String == "paused" && (listed["replay"] as? [String: Any])?["until"] as? String == "2026-11-20T10:00:00.000Z",
                "an open end is now: \(listed)")
        let second = endpoint.request("POST", "/api/relays/replay?name=partner&from=2026-11-01", headers: Self.admin)
        #expect(second.status == 409 && json(second)["rule"] as? String == "replay_under_way")
        #expect(endpoint.request("DELETE", "/api/relays/replay?name=partner", headers: Self.admin).status == 200)
        #expect(json(endpoint.request("DELETE", "/api/relays/replay?name=partner", headers: Self.admin))["rule"] as? String == "no_replay")
        // Hostile requests: each a 4xx naming its field and rule.
        let refusals: [(String, Int, String, String)] = [
            ("?name=partner", 400, "from", "missing_parameter"),
            ("?name=partner&from=2026-13-01", 400, "from", "invalid_date"),
            ("?name=partner&since=yesterday", 400, "since", "invalid_time"),
            ("?name=partner&from=2026-11-20&since=2026-11-20T00:00:00Z", 400, "since", "conflicting_period"),
            ("?name=partner&from=2026-11-20&to=2026-11-19", 400, "to", "invalid_period"),
            ("?name=partner&since=2026-11-20T00:00:00Z&until=2026-11-20T00:00:00Z", 400, "until", "invalid_period"),
            ("?name=partner&from=2026-11-20&limit=1", 400, "limit", "unknown_parameter"),
            ("?from=2026-11-20", 400, "name", "missing_parameter"),
            ("?name=nobody&from=2026-11-20", 404, "name", "not_found"),
            ("?name=partner&from=" + String(repeating: "9", count: 10_000), 400, "from", "invalid_date"),
            ("?name=partner&from=%00", 400, "from", "invalid_date"),
        ]
        for (query, status, field, rule) in refusals {
            let response = endpoint.request("POST", "/api/relays/replay" + query, headers: Self.admin)
            let problem = json(response)
            #expect(response.status == status && problem["field"] as? String == field && problem["rule"] as? String == rule,
                    "\(query.prefix(60)): \(response.status) \(response.bodyText.prefix(200))")
        }
        #expect(endpoint.request("POST", "/api/relays/replay?name=partner&from=2026-11-20").status == 401)
    }

    @Test func aDestinationFailingForAnHourIsCalledOutAndOneFailingForDaysIsDeadUntilResumed() throws {
        // A port held without listening: refused until the receiver comes up on it.
        let held = try HeldPort()
        let port = held.port
        let url = "http://127.0.0.1:\(port)/copies"
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(Self.app(Self.appID).utf8)).status == 201)
        #expect(Self.register(endpoint, name: "partner", url: url, appID: Self.appID).status == 201)
        #expect(Self.send(endpoint, PostbackWindowTests.postback(830)).status == 200)
        #expect(endpoint.relayTurns.until { Self.listed(endpoint, "partner")["state"] as? String == "retrying" })
        #expect(Self.listed(endpoint, "partner")["warning"] == nil, "not called out in its first hour")
        // An hour later it is called out, on the page and in /metrics.
        endpoint.clock.set("2026-11-20T11:00:01Z")
        #expect(endpoint.relayTurns.until { Self.listed(endpoint, "partner")["state"] as? String == "failing" })
        let failing = Self.listed(endpoint, "partner")
        #expect((failing["warning"] as? String)?.contains("Relay destination partner (\(url)) has taken no copy since 2026-11-20T10:00:00.000Z") == true,
                "\(failing)")
        #expect(failing["failing_since"] as? String == "2026-11-20T10:00:00.000Z")
        let metrics = endpoint.request("GET", "/metrics", headers: Self.admin).bodyText
        #expect(metrics.contains(#"attribution_relay_state{destination="partner",state="failing"} 1"#))
        #expect(metrics.contains(#"attribution_relay_state{destination="partner",state="delivering"} 0"#))
        // Three days on (--relay-dead-after-days), dead: no longer tried, and so after a restart.
        endpoint.clock.set("2026-11-23T10:00:01Z")
        #expect(endpoint.relayTurns.until { Self.listed(endpoint, "partner")["state"] as? String == "dead" })
        #expect((Self.listed(endpoint, "partner")["warning"] as? String)?.contains("POST /api/relays/resume?name=partner") == true)
        endpoint.stop()
        endpoint = try Self.start(directory)
        defer { endpoint.stop() }
        endpoint.clock.set("2026-11-23T12:00:00Z")
        #expect(Self.listed(endpoint, "partner")["state"] as? String == "dead")
        // Back, and resumed: the copy it missed arrives.
        held.release()
        let partner = try Receiver(port: port)
        defer { partner.stop() }
        let resumed = endpoint.request("POST", "/api/relays/resume?name=partner", headers: Self.admin)
        #expect(resumed.status == 200 && json(resumed)["dead_since"] == nil, "\(resumed.bodyText)")
        #expect(endpoint.relayTurns.until { partner.received.withLock { $0.count } == 1 })
        #expect(partner.received.withLock { $0.first?.body } == PostbackWindowTests.postback(830))
        #expect(endpoint.relayTurns.until { Self.listed(endpoint, "partner")["state"] as? String == "delivering" })
    }

    @Test func aRestartSendsNothingTwiceAndGoesOnWithWhatComesAfter() throws {
        let partner = try Receiver()
        defer { partner.stop() }
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(RelayEndpointTests.app(RelayEndpointTests.appID).utf8)).status == 201)
        #expect(Self.register(endpoint, name: "partner", url: partner.url, appID: Self.appID).status == 201)
        #expect(Self.send(endpoint, PostbackWindowTests.postback(810)).status == 200)
        #expect(endpoint.relayTurns.until { partner.received.withLock { $0.count } == 1 && endpoint.server.relays.statuses.first?.delivered == 1 })
        endpoint.stop()
        endpoint = try Self.start(directory)
        defer { endpoint.stop() }
        #expect(Self.send(endpoint, PostbackWindowTests.postback(811)).status == 200)
        #expect(endpoint.relayTurns.until { partner.received.withLock { $0.count } >= 2 })
        #expect(endpoint.relayTurns.until { endpoint.server.relays.statuses.first?.delivered == 2 })
        #expect(partner.received.withLock { $0.map(\.body) } == [PostbackWindowTests.postback(810), PostbackWindowTests.postback(811)])
    }

    @Test func onlyTheAdminTokenChangesRelaysAndABadOneIsRefusedNamingItsField() throws {
        let endpoint = try Self.start()
        defer { endpoint.stop() }
        #expect(endpoint.request("GET", "/api/relays").status == 401)
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(RelayEndpointTests.app(RelayEndpointTests.appID).utf8)).status == 201)
        let refusals: [(String, String)] = [
            (#"{"name":"p","url":"https://user:pw@copies.partner.example/","app_id":6443210987,"protocols":["skadnetwork"]}"#, "userinfo_not_allowed"),
            (#"{"name":"p","url":"gopher://copies.partner.example/","app_id":6443210987,"protocols":["skadnetwork"]}"#, "unsupported_scheme"),
            (#"{"name":"p","url":"https://10.1.2.3/","app_id":6443210987,"protocols":["skadnetwork"]}"#, "internal_address"),
            (#"{"name":"p","url":"https://localhost/","app_id":6443210987,"protocols":["skadnetwork"]}"#, "internal_address"),
            (#"{"name":"p","url":"https://copies.partner.invalid/","app_id":6443210987,"protocols":["skadnetwork"]}"#, "host_does_not_resolve"),
            (#"{"name":"p","url":"https://localhost/","app_id":1,"protocols":["skadnetwork"],"internal":true}"#, "unknown_app"),
            (#"{"name":"p","url":"https://localhost/","site":"other.example","protocols":["pcm"],"internal":true}"#, "site_not_served"),
        ]
        for (body, rule) in refusals {
            let response = endpoint.request("POST", "/api/relays", headers: Self.admin, body: Array(body.utf8))
            #expect((400...499).contains(response.status) && json(response)["rule"] as? String == rule, "\(rule): \(response.bodyText)")
        }
        // A collector on this machine: it resolves (to loopback), and says it may be internal.
        let good = #"{"name":"p","url":"https://localhost:9/copies","app_id":6443210987,"protocols":["skadnetwork"],"internal":true}"#
        #expect(endpoint.request("POST", "/api/relays", headers: Self.admin, body: Array(good.utf8)).status == 201)
        #expect(endpoint.request("POST", "/api/relays", headers: Self.admin, body: Array(good.utf8)).status == 409)
        #expect(endpoint.request("POST", "/api/relays/pause?name=p", headers: Self.admin).status == 200)
        #expect(endpoint.request("GET", "/api/relays", headers: Self.admin).bodyText.contains(#""paused":true"#))
        #expect(endpoint.request("POST", "/api/relays/resume?name=nope", headers: Self.admin).status == 404)
        // The name's parameter, hostile: missing, empty, another beside it, long, encoded, odd bytes.
        for (query, status) in [("", 400), ("?name=", 400), ("?name=p&other=1", 400), ("?name=" + String(repeating: "p", count: 100_000), 404),
                                ("?name=%70", 200), ("?name=%00", 404), ("?name=%FF%FE", 404), ("?name=p%20", 404)] {
            let response = endpoint.request("POST", "/api/relays/pause" + query, headers: Self.admin)
            #expect(response.status == status && response.header("Content-Type") == (status == 200 ? "application/json" : "application/problem+json"),
                    "pause\(query.prefix(40)): \(response.status)")
        }
        #expect(endpoint.request("DELETE", "/api/relays?name=p", headers: Self.admin).status == 204)
        #expect(endpoint.request("DELETE", "/api/relays?name=p", headers: Self.admin).status == 404)
    }

    @Test func aViewerReadsTheDestinationsOfItsOwnSitesAlone() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example", "shop.example"])
        defer { endpoint.stop() }
        for body in [#"{"id":"acme","name":"Acme","sites":["app.example"]}"#, #"{"id":"shopco","name":"Shop Co","sites":["shop.example"]}"#] {
            #expect(endpoint.request("POST", "/api/advertisers", headers: Self.admin, body: Array(body.utf8)).status == 201)
        }
        #expect(endpoint.request("POST", "/api/apps", headers: Self.admin, body: Array(RelayEndpointTests.app(RelayEndpointTests.appID).utf8)).status == 201)
        #expect(Self.register(endpoint, name: "acme-app", url: "https://localhost:9/a", appID: Self.appID).status == 201)
        let site = #"{"name":"shop-site","url":"https://localhost:9/s","site":"shop.example","protocols":["pcm","skadnetwork"],"internal":true,"secret":"0123456789abcdef0123456789abcdef"}"#
        #expect(endpoint.request("POST", "/api/relays", headers: Self.admin, body: Array(site.utf8)).status == 201)
        func names(_ token: String) -> [String] {
            let answer = json(endpoint.request("GET", "/api/relays", headers: [("Authorization", "Bearer \(token)")]))
            return (answer["destinations"] as? [[String: Any]] ?? []).compactMap { ($0["destination"] as? [String: Any])?["name"] as? String }
        }
        #expect(names("test-token") == ["acme-app", "shop-site"])
        let shopco = try ViewerTokenStore(dataDirectory: endpoint.directory).create(label: "shop", advertiser: "shopco", now: endpoint.clock.read()).token
        let acme = try ViewerTokenStore(dataDirectory: endpoint.directory).create(label: "acme", advertiser: "acme", now: endpoint.clock.read()).token
        #expect(names(shopco) == ["shop-site"])
        #expect(names(acme) == ["acme-app"])
        #expect(!endpoint.request("GET", "/api/relays", headers: [("Authorization", "Bearer \(shopco)")]).bodyText.contains("0123456789abcdef"))
        #expect(endpoint.request("POST", "/api/relays/pause?name=shop-site", headers: [("Authorization", "Bearer \(shopco)")]).status == 403)
    }
}

/// The endpoint SIGKILLed while it relays: after the restart every copy has reached the
/// destination, each copy's deliveries all carry one id.
@Suite struct RelayKillTests {
    @Test func aSIGKILLMidDeliveryLosesNoCopyAndGivesNoneTwoIDs() throws {
        // A receiver slow enough that the kill lands mid-way through the copies.
        let receiver = try RelayEndpointTests.Receiver(delay: 0.02)
        defer { receiver.stop() }
        let directory = temporaryDirectory()
        let arguments = ["--data", directory, "--site", "app.example", "--token", "t"]
        let admin = [("Authorization", "Bearer t")]
        var server = try EndpointProcess(arguments: arguments)
        let destination = #"{"name":"partner","url":"\#(receiver.url)","site":"app.example","protocols":["skadnetwork"],"copies":"all","internal":true}"#
        #expect(try httpRequest(port: server.port, method: "POST", path: "/api/relays", headers: admin, body: Array(destination.utf8)).status == 201)
        var sent: [[UInt8]] = []
        for n in 0..<60 {
            let body = Array(#"{"version":"4.0","ad-network-id":"kill.skadnetwork","source-identifier":"1\#(n % 10)","app-id":1,"transaction-id":"k-\#(n)","redownload":false,"fidelity-type":1,"did-win":true,"postback-sequence-index":0,"attribution-signature":"MEUCIQ=="}"#.utf8)
            #expect(try httpRequest(port: server.port, method: "POST", path: "/.well-known/skadnetwork/report-attribution/",
                                    host: "app.example", headers: [("Content-Type", "application/json")], body: body).status == 200)
            sent.append(body)
        }
        #expect(receiver.arrivals.until { receiver.received.withLock { $0.count } >= 10 })
        server.signal(SIGKILL)
        _ = server.wait()
        let beforeKill = receiver.received.withLock { $0.count }
        #expect(beforeKill < 60, "the kill came mid-way (\(beforeKill) of 60 had arrived)")

        server = try EndpointProcess(arguments: arguments)
        defer { server.signal(SIGTERM); _ = server.wait() }
        #expect(receiver.arrivals.until { Set(receiver.received.withLock { $0.map(\.body) }).count == 60 })
        let received = receiver.received.withLock { $0 }
        #expect(Set(received.map(\.body)) == Set(sent), "every copy, whatever was in flight")
        var ids: [[UInt8]: Set<String>] = [:]
        for delivery in received { ids[delivery.body, default: []].insert(delivery.headers["x-attribution-delivery"] ?? "") }
        #expect(ids.values.allSatisfy { $0.count == 1 }, "a copy sent again carries its first id")
    }

    @Test(arguments: [("--relay-timeout", "0"), ("--relay-timeout", "-1"), ("--relay-timeout", "301"), ("--relay-timeout", "1e308"),
                      ("--relay-timeout", "nan"), ("--relay-timeout", "")])
    func aRelayTimeOutOutsideItsRangeIsRefusedAtStart(flag: String, value: String) {
        #expect(throws: (any Error).self, "\(flag) \(value)") {
            guard case .run(let configuration) = try EndpointConfiguration.parse(arguments: ["--dev", flag, value], environment: [:]) else { return }
            try configuration.check()
        }
    }

    @Test func aConfigFilesRelaysAreCheckedLikeTheAPIsAndABadOneStopsTheStart() throws {
        let directory = temporaryDirectory()
        let config = directory + "-config.json"
        let bad = #"{"apps":[\#(RelayEndpointTests.app(RelayEndpointTests.appID))],"relays":[{"name":"p","url":"https://user@copies.partner.example/","app_id":6443210987,"protocols":["skadnetwork"]}]}"#
        try bad.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) { _ = try LiveEndpoint(sites: ["app.example"], directory: directory) { c in
            let file = try! Self.parsed(config)
            (c.apps, c.relays) = (file.apps, file.relays)
        } }
        let good = #"{"apps":[\#(RelayEndpointTests.app(RelayEndpointTests.appID))],"relays":[{"name":"p","url":"https://localhost:9/c","app_id":6443210987,"protocols":["skadnetwork"],"internal":true}]}"#
        try good.write(toFile: config, atomically: true, encoding: .utf8)
        let endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory) { c in
            let file = try! Self.parsed(config)
            (c.apps, c.relays) = (file.apps, file.relays)
        }
        defer { endpoint.stop() }
        #expect(endpoint.request("GET", "/api/relays", headers: RelayEndpointTests.admin).bodyText.contains(#""name":"p""#))
    }

    /// The configuration a `--config FILE` gives, on a test endpoint's other settings.
    static func parsed(_ config: String) throws -> EndpointConfiguration {
        guard case .run(let configuration) = try EndpointConfiguration.parse(arguments: ["--config", config, "--site", "app.example"],
                                                                              environment: [:]) else { fatalError("not a run") }
        return configuration
    }
}
