import Foundation
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// The Apps view by country: `country-code` as the highest tier sends it, "not sent" below it,
/// never guessed, and counted as the exports list it, through a restart.
@Suite(.serialized) struct PostbackCountryTests {
    @Test func postbacksAreCountedByTheCountryTheyCarry() throws {
        let directory = temporaryDirectory()
        var endpoint = try SchemaVersionTests.start(directory)
        #expect(SchemaVersionTests.admin(endpoint, "POST", SchemaVersionTests.v1).status == 201)
        let countries: [String?] = ["US", "US", "us", "DE", nil, nil, nil, "Germany", "\\u0000", "12"]
        for (n, country) in countries.enumerated() {
            let extra = country.map { #","country-code":"\#($0)""# } ?? ""
            try SchemaVersionTests.send(endpoint, SchemaVersionTests.postback(900 + n, index: 0, value: #""conversion-value":12"# + extra))
        }
        func shown() throws -> [String] {
            let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-01&to=2026-11-30"))
            return try #require(summary["countries"] as? [[String: Any]]).map { "\($0["country"]!)=\($0["postbacks"]!)/\($0["installs"]!)" }
        }
        // A code that is not two upper-case letters is quarantined at intake (`country_code_invalid`):
        // counted in no country, as in nothing else.
        let expected = ["not sent=3/3", "US=2/2", "DE=1/1"]
        let first = try shown()
        #expect(first == expected)
        // The exports list the same countries as sent.
        let exported = try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").map {
            (try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any])["country-code"] as? String
        }
        #expect(exported.filter { $0 == nil }.count == 3 && exported.filter { $0 == "US" }.count == 2)
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-01&to=2026-11-30"))
        #expect((summary["quarantine_reasons"] as? [String: Int])?["country_code_invalid"] == 4)
        // The next day seals this one; the restart takes it from its digest.
        endpoint.clock.set("2026-11-21T10:00:00Z")
        try SchemaVersionTests.send(endpoint, SchemaVersionTests.postback(950, index: 0, value: #""conversion-value":12,"country-code":"FR""#))
        endpoint.server.digests.sweep()
        endpoint.stop()
        endpoint = try SchemaVersionTests.start(directory)
        #expect(endpoint.server.startedFromDigests >= 1)
        defer { endpoint.stop() }
        endpoint.server.waitUntilPostbacksReady()
        let again = try shown()
        #expect(again == expected + ["FR=1/1"])
    }
}
