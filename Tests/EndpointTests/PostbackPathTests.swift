import Foundation
import HTTPServer
import Locking
import Postbacks
import Primitives
import RecordLog
import RawHTTPClient
import Testing
@testable import Endpoint

/// The app developer's well-known paths, over real HTTP on port 0: every public and generated
/// vector, duplicates within a turn and across a restart, and what is refused.
@Suite struct PostbackPathTests {
    static let skadnetwork = "/.well-known/skadnetwork/report-attribution/"
    static let adattributionkit = "/.well-known/appattribution/report-attribution/"

    static func vectors(_ file: String) throws -> [String: Any] {
        let url = URL(fileURLWithPath: repositoryRoot + "/Tests/PostbackTests/Resources/vectors/\(file).json")
        return try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
    }

    func send(_ endpoint: LiveEndpoint, _ path: String, _ body: [UInt8], host: String = "app.example",
              headers: [(String, String)] = []) throws -> RawResponse {
        try httpRequest(port: endpoint.port, method: "POST", path: path, host: host, headers: headers, body: body)
    }

    func postbacks(_ endpoint: LiveEndpoint) throws -> [[String: Any]] {
        let response = try endpoint.get("/api/postbacks")
        #expect(response.status == 200)
        return try response.bodyText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    @Test func applesExamplesVerifyAndTheExportSaysSo() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        var expected: [String: String] = [:]
        for (name, value) in try Self.vectors("skadnetwork_postbacks").sorted(by: { $0.key < $1.key }) {
            let entry = value as! [String: Any]
            let body = try JSONSerialization.data(withJSONObject: entry["postback"]!)
            // No Content-Type at all: Apple does not document one.
            let response = try send(endpoint, Self.skadnetwork, Array(body))
            #expect(response.status == 200, "\(name): \(response.bodyText)")
            expected[json(response)["id"].map { "\($0)" } ?? ""] = (entry["expect_valid"] as! Bool) ? "apple" : "invalid"
        }
        for (name, value) in try Self.vectors("adattributionkit_postbacks") {
            let entry = value as! [String: Any]
            let body = try JSONSerialization.data(withJSONObject: entry["body"]!)
            let response = try send(endpoint, String(Self.adattributionkit.dropLast()), Array(body),
                                    headers: [("Content-Type", "text/plain")])
            #expect(response.status == 200, "\(name): \(response.bodyText)")
            expected[json(response)["id"].map { "\($0)" } ?? ""] = (entry["expect_valid"] as! Bool) ? "apple_development" : "invalid"
        }
        let rows = try postbacks(endpoint)
        #expect(rows.count == 10)
        for row in rows {
            #expect(row["signature"] as? String == expected["\(row["id"]!)"], "\(row)")
        }
        // Apple's examples share transaction ids across versions: the 2.1 one repeats the 2.2
        // one's key with other content, a new fact kept and quarantined.
        let gist = try #require(rows.first { $0["version"] as? String == "2.1" })
        #expect((gist["reasons"] as? [String])?.contains("conflicting_duplicate") == true)
        #expect(gist["verdict"] as? String == "quarantined")
        let development = try #require(rows.first { $0["kid"] as? String == "apple-development-identifier/1" })
        #expect(development["reasons"] as? [String] == ["development_postback"])
        #expect(Set(development["unsigned_fields"] as? [String] ?? []) == ["conversion-value", "ad-interaction-type", "country-code"])
        #expect(development["postback-identifier"] as? String == "85546EB7-FD39-44BC-8990-C98A4AC36A49")
        #expect(development["conversion-value"] as? Int == 24)
    }

    /// With signatures checked on the loop (0 threads) and by a pool (2).
    @Test(arguments: [0, 2]) func generatedVectorsVerifyOnlyWithTheirKeyTrusted(signatureThreads: Int) throws {
        let document = try Self.vectors("generated_postbacks")
        let vectors = document["vectors"] as! [[String: Any]]
        for trusted in [true, false] {
            let endpoint = try LiveEndpoint(sites: ["app.example"]) { configuration in
                configuration.signatureThreads = signatureThreads
                if trusted { configuration.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)] }
            }
            defer { endpoint.stop() }
            var expected: [Int: String] = [:]
            for vector in vectors {
                let path = vector["protocol"] as! String == "skadnetwork" ? Self.skadnetwork : Self.adattributionkit
                let response = try send(endpoint, path, Array((vector["body"] as! String).utf8))
                #expect(response.status == 200)
                var signature = vector["signature"] as! String
                if !trusted && signature == "test_key" { signature = "invalid" }
                expected[json(response)["id"] as! Int] = signature
            }
            let rows = try postbacks(endpoint)
            #expect(rows.count == vectors.count)
            for row in rows { #expect(row["signature"] as? String == expected[row["id"] as! Int], "\(row)") }
            let csv = try endpoint.get("/api/postbacks.csv")
            #expect(csv.bodyText.split(separator: "\r\n").count == vectors.count + 1)
        }
    }

    @Test(arguments: [0, 2]) func aRetryIsCountedNotStoredWithinATurnAndAcrossARestart(signatureThreads: Int) throws {
        let directory = temporaryDirectory()
        let body = try JSONSerialization.data(withJSONObject: (try Self.vectors("skadnetwork_postbacks")["apple_4.0_web_high_tier"] as! [String: Any])["postback"]!)
        var endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory) { $0.signatureThreads = signatureThreads }
        // Two copies in one write: the loop reads both in one turn, before the first is on disk.
        let client = try RawHTTPClient(port: endpoint.port)
        let request = Array("POST \(Self.skadnetwork) HTTP/1.1\r\nHost: app.example\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + Array(body)
        try client.send(request + request)
        let first = try client.readResponse(), second = try client.readResponse()
        #expect(first.status == 200 && second.status == 200)
        #expect(json(first)["id"] as? Int == 1 && json(second)["retry"] as? Bool == true && json(second)["id"] as? Int == 1)
        var rows = try postbacks(endpoint)
        #expect(rows.count == 1 && rows[0]["duplicates_received"] as? Int == 1)
        endpoint.stop()

        endpoint = try LiveEndpoint(sites: ["app.example"], directory: directory) { $0.signatureThreads = signatureThreads }
        defer { endpoint.stop() }
        // Reordered keys and other spacing: the same postback, as a forwarder may pass it on.
        let object = try JSONSerialization.jsonObject(with: body) as! [String: Any]
        let reordered = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
        let again = try send(endpoint, Self.skadnetwork, Array(reordered))
        #expect(again.status == 200 && json(again)["retry"] as? Bool == true)
        rows = try postbacks(endpoint)
        #expect(rows.count == 1 && rows[0]["duplicates_received"] as? Int == 2)
        // Another unsigned value under the same key is a new fact: stored, quarantined.
        var changed = object
        changed["conversion-value"] = 12
        let conflict = try send(endpoint, Self.skadnetwork, Array(try JSONSerialization.data(withJSONObject: changed)))
        #expect(json(conflict)["verdict"] as? String == "quarantined")
        #expect(json(conflict)["reasons"] as? [String] == ["conflicting_duplicate"])
        #expect(try postbacks(endpoint).count == 2)
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains(#"attribution_postback_retries_total{protocol="skadnetwork"} 1"#))
    }

    @Test func manyCopiesOfManyPostbacksAtOnceAreEachStoredOnce() throws {
        // Eight connections each send every postback twice in one write, all at once: copies
        // that arrive while the first is still being checked must be counted, not stored.
        let document = try Self.vectors("generated_postbacks")
        let bodies = (document["vectors"] as! [[String: Any]]).filter { $0["protocol"] as? String == "adattributionkit" }.map { Array(($0["body"] as! String).utf8) }
        let endpoint = try LiveEndpoint(sites: ["app.example"]) { configuration in
            configuration.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
        }
        defer { endpoint.stop() }
        let clients = try (0..<8).map { _ in try RawHTTPClient(port: endpoint.port) }
        for client in clients {
            var bytes: [UInt8] = []
            for body in bodies {
                let request = Array("POST \(Self.adattributionkit) HTTP/1.1\r\nHost: app.example\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
                bytes += request + request
            }
            try client.send(bytes)
        }
        for client in clients {
            for _ in 0..<(2 * bodies.count) { #expect(try client.readResponse().status == 200) }
        }
        let rows = try postbacks(endpoint)
        #expect(rows.count == bodies.count)
        #expect(rows.reduce(0) { $0 + ($1["duplicates_received"] as! Int) } == 16 * bodies.count - bodies.count)
    }

    @Test func onlyWhatCannotBeAPostbackIsRefused() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"]) { $0.maxPostbackBytes = 2048 }
        defer { endpoint.stop() }
        let cases: [(String, String, Int, String)] = [
            (Self.skadnetwork, "not json", 400, "malformed_json"),
            (Self.skadnetwork, "[]", 400, "not_an_object"),
            (Self.skadnetwork, #"{"ad-network-id":"n","transaction-id":"t"}"#, 400, "not_a_postback"),
            (Self.adattributionkit, #"{"jws-string":"only.two"}"#, 400, "not_a_jws"),
            (Self.adattributionkit, #"{"conversion-value":1}"#, 400, "not_a_postback"),
            (Self.skadnetwork, "{\"x\":\"" + String(repeating: "a", count: 3000) + "\"}", 413, "body_too_large"),
        ]
        for (path, body, status, rule) in cases {
            let response = try send(endpoint, path, Array(body.utf8))
            #expect(response.status == status, "\(body.prefix(40))")
            #expect(json(response)["rule"] as? String == rule)
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        let elsewhere = try send(endpoint, Self.skadnetwork, Array(#"{"ad-network-id":"n","transaction-id":"t","attribution-signature":"s"}"#.utf8),
                                 host: "other.example")
        #expect(elsewhere.status == 421 && json(elsewhere)["rule"] as? String == "site_not_served")
        #expect(try httpRequest(port: endpoint.port, method: "GET", path: Self.skadnetwork).status == 405)
        // Anything that could be a postback is kept, whatever is wrong with it.
        let odd = try send(endpoint, Self.skadnetwork, Array(#"{"version":"9.9","ad-network-id":"n","transaction-id":"t","attribution-signature":"s"}"#.utf8))
        #expect(odd.status == 200)
        #expect(json(odd)["signature"] as? String == "unverifiable")
        #expect((json(odd)["reasons"] as? [String])?.first == "app_id_missing")
        #expect(try postbacks(endpoint).count == 1)
        #expect(try endpoint.get("/api/rejections").bodyText.contains("not_a_jws"))
    }
}

/// The queue of postbacks waiting for their signature check, served by a real event loop whose
/// turns take up the queue only when the test says so: what a flood of postbacks gets once the
/// queue is full, and that the rest are stored in order once taken up.
@Suite struct PostbackQueueTests {
    /// The endpoint's turn, held shut until `open`.
    final class HeldTurns: HTTPHandler, @unchecked Sendable {
        let intake: PostbackHandler
        let store: RecordLog
        let open = Locked(false)

        init(intake: PostbackHandler, store: RecordLog) {
            self.intake = intake
            self.store = store
        }

        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            do { try intake.handle(.skadnetwork, request, responder: responder) } catch {
                responder.respond(Problem(refusal: error).response)
            }
        }

        func endTurn() -> Bool {
            guard open.withLock({ $0 }) else { return false }
            intake.drainForTurn()
            store.commitQueued(overlappingFlush: true)
            return intake.hasReady
        }
    }

    @Test func aFullQueueAnswers503AndTheRestAreStoredInOrder() throws {
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        defer { store.close() }
        let ledger = PostbackLedger()
        let context = HandlerContext(trustedProxies: [], rejections: RejectionLog(), metrics: EndpointMetrics(),
                                     clock: { EndpointClock.systemNow() }, served: ServedSites(["app.example"], developmentMode: false))
        let queue = PostbackQueue(capacity: 2)
        let intake = PostbackHandler(checks: PostbackChecksOnTheLoop(queue: queue, ledger: ledger), keyring: try PostbackKeyring(),
                                     ledger: ledger, aggregates: AppsAggregates(), rebuild: PostbackRebuild(store: store, range: nil, take: { _ in }),
                                     developmentMode: false, maxPostbackBytes: 16384, store: store, context: context)
        let handler = HeldTurns(intake: intake, store: store)
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, handler: handler)
        _ = try server.start()
        defer {
            server.shutdown()
            server.waitUntilStopped()
        }
        let answers = Locked<[Int: Int]>([:])
        let answered = DispatchSemaphore(value: 0)
        for n in 0..<3 {
            let body = #"{"version":"3.0","ad-network-id":"n","campaign-id":1,"app-id":1,"transaction-id":"t-\#(n)","redownload":false,"fidelity-type":1,"did-win":true,"attribution-signature":"MEUCIQ=="}"#
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: "app.example")
            let request = HTTPRequest(method: "POST", target: "/", headers: headers, body: Array(body.utf8))
            DispatchQueue.global().async {
                let status = server.respond(to: request)?.status ?? 0
                answers.withLock { $0[n] = status }
                answered.signal()
            }
        }
        // One of the three found the queue full: refused at once, with a reason devices act on
        // (they retry); the other two wait for a turn that takes them up.
        answered.wait()
        let refused = try #require(answers.withLock { $0 }.first)
        #expect(refused.value == 503)
        #expect(queue.count == 2)
        handler.open.withLock { $0 = true }
        server.requestTurn()
        answered.wait()
        answered.wait()
        let all = answers.withLock { $0 }
        #expect(all.values.sorted() == [200, 200, 503])
        // The two taken up are stored, and nothing of the one refused.
        let stored = Array(sequence(state: store.postbacks()) { $0.next() }).map { $0.draft.duplicateKey }
        let expected = (0..<3).filter { all[$0] == 200 }.map { "skadnetwork\u{1F}n\u{1F}t-\($0)\u{1F}0" }
        #expect(Set(stored) == Set(expected))
        #expect(stored.count == 2)
    }
}
