import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// `POST /conversion-value`: the app sends its counters and gets the value to set, from its
/// registered schema; nothing it sends is kept.
@Suite struct ConversionValueTests {
    static let app = #"{"app_id":6443210987,"site":"app.example","name":"Demo Puzzle","schema":{"fine":[{"from":0,"to":0,"meaning":"installed"},{"from":1,"to":9,"meaning":"levels completed","events":["level_complete"]},{"from":10,"to":29,"meaning":"trial started","events":["trial_start"]},{"from":30,"to":63,"meaning":"purchase","revenue":{"min":0.99,"max":49.99,"currency":"EUR"}}],"coarse":{"low":"installed","medium":"played","high":"paid"},"coarse_from_fine":{"medium":10,"high":30},"lock_at":{"fine":63,"coarse":"high"}}}"#
    static let idfa = "AEBE52E7-03EE-455A-B3C4-E57283966239"

    func register(_ endpoint: LiveEndpoint) {
        let response = endpoint.request("POST", "/api/apps", headers: [("Authorization", "Bearer test-token")], body: Array(Self.app.utf8))
        #expect(response.status == 201, "\(response.bodyText)")
    }

    func ask(_ port: UInt16, _ body: String) throws -> RawResponse {
        try httpRequest(port: port, method: "POST", path: "/conversion-value", host: "app.example",
                        headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }

    @Test func theAppGetsTheValueOfItsSchemaOverHTTP() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        register(endpoint)
        endpoint.clock.set("2026-11-20T10:00:00Z")
        // Launched an hour ago, three levels done: the first window, fine value 3.
        let first = try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":"2026-11-20T09:00:00Z","conversion_value":1,"events":{"level_complete":3}}"#)
        #expect(first.status == 200 && first.header("Content-Type") == "application/json")
        #expect(first.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"{"conversion_value":3,"coarse_conversion_value":"low","lock_window":false,"status":"ok","window":1}"#)
        #expect(first.header("Set-Cookie") == nil)
        // A purchase of 60 EUR reaches 63, where the schema locks the window.
        let paid = json(try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":"2026-11-20T09:00:00Z","revenue":{"EUR":60}}"#))
        #expect(paid["conversion_value"] as? Int == 63 && paid["lock_window"] as? Bool == true)
        // Four days after launch: the second window, a coarse value only.
        let later = json(try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":"2026-11-16T09:00:00Z","events":{"trial_start":1}}"#))
        #expect(later["window"] as? Int == 2 && later["conversion_value"] is NSNull && later["coarse_conversion_value"] as? String == "medium")
        // Forty days after launch: no window is open.
        let closed = json(try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":"2026-10-11T09:00:00Z"}"#))
        #expect(closed["status"] as? String == "window_closed")
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains(#"attribution_conversion_value_answers_total{app_id="6443210987",outcome="window_1"} 2"#))
        #expect(metrics.contains(#"attribution_conversion_value_answers_total{app_id="6443210987",outcome="window_2"} 1"#))
        #expect(metrics.contains(#"attribution_conversion_value_answers_total{app_id="6443210987",outcome="window_closed"} 1"#))
    }

    @Test func refusalsAreExplained() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        register(endpoint)
        let unknown = try ask(endpoint.port, #"{"app_id":1,"first_launch":1762000000}"#)
        #expect(unknown.status == 404 && json(unknown)["rule"] as? String == "unknown_app" && json(unknown)["field"] as? String == "app_id")
        let notJSON = try ask(endpoint.port, "app_id=6443210987")
        #expect(notJSON.status == 400 && json(notJSON)["rule"] as? String == "malformed_json")
        let badCounter = try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":1762000000,"events":{"level_complete":-2}}"#)
        #expect(badCounter.status == 422 && json(badCounter)["field"] as? String == "events.level_complete")
        #expect(badCounter.header("Content-Type") == "application/problem+json")
        let future = try ask(endpoint.port, #"{"app_id":6443210987,"first_launch":"2027-01-01T00:00:00Z"}"#)
        #expect(future.status == 422 && json(future)["rule"] as? String == "time_in_the_future")
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains(#"attribution_conversion_value_answers_total{app_id="",outcome="unknown_app"} 1"#))
        #expect(metrics.contains(#"attribution_conversion_value_answers_total{app_id="6443210987",outcome="out_of_range"} 1"#))
    }

    /// With the access log on, an identifier an SDK sends appears in no log line and no file.
    @Test func identifiersAreWrittenNowhere() throws {
        let directory = temporaryDirectory()
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "app.example", "--token", "t"], accessLog: true)
        let registered = try httpRequest(port: server.port, method: "POST", path: "/api/apps", headers: [("Authorization", "Bearer t")],
                                         body: Array(Self.app.utf8))
        #expect(registered.status == 201)
        for body in [#"{"app_id":6443210987,"first_launch":1762000000,"idfa":"\#(Self.idfa)","idfv":"\#(Self.idfa)"}"#,
                     #"{"app_id":6443210987,"first_launch":"not a time","idfa":"\#(Self.idfa)"}"#,
                     #"{"app_id":5,"first_launch":1762000000,"idfa":"\#(Self.idfa)"}"#] {
            _ = try ask(server.port, body)
        }
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(status == 0)
        #expect(stderr.contains("/conversion-value"), "the access log was on")
        #expect(!stderr.contains(Self.idfa))
        let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
        #expect(!files.isEmpty)
        for file in files {
            let data = FileManager.default.contents(atPath: directory + "/" + file) ?? Data()
            #expect(data.range(of: Data(Self.idfa.utf8)) == nil, "\(file)")
        }
    }
}
