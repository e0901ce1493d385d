import Foundation
import RawHTTPClient
import Testing
@testable import Demo
@testable import Endpoint

/// Schemas keep their history, end to end: postbacks before, across and after a change to an
/// app's schema, read with the version they were set under on the Apps view, its crosstab and
/// CSV, and the exports, the same after a restart; the registrations' answers.
@Suite(.serialized) struct SchemaVersionTests {
    static let appID = DemoPostbacks.appID
    static func app(_ fine: String, name: String = "Demo Puzzle") -> String {
        #"{"app_id":\#(appID),"site":"app.example","name":"\#(name)","schema":{"fine":[\#(fine)],"coarse":{"low":"installed","high":"paid"}}}"#
    }
    static let v1 = app(#"{"from":0,"to":9,"meaning":"tutorial"},{"from":10,"to":63,"meaning":"purchase"}"#)
    static let v2 = app(#"{"from":0,"to":19,"meaning":"level"},{"from":20,"to":63,"meaning":"subscription"}"#)

    /// An AdAttributionKit postback of window `index` with a fine (first window) or coarse value.
    static func postback(_ n: Int, index: Int, value: String) -> [UInt8] {
        let payload = #"{"impression-type":"app-impression","ad-network-identifier":"demo.adattributionkit","source-identifier":"\#(index == 0 ? "5678" : "56")","advertised-item-identifier":\#(appID),"conversion-type":"download","postback-identifier":"\#(DemoPostbacks.uuid(700_000 + n))","did-win":true,"postback-sequence-index":\#(index),"marketplace-identifier":"com.apple.AppStore"}"#
        return Array(#"{"jws-string":"\#(DemoPostbacks.jws(payload))","ad-interaction-type":"click",\#(value)}"#.utf8)
    }

    static func start(_ directory: String) throws -> LiveEndpoint {
        try LiveEndpoint(sites: ["app.example"], directory: directory, startingAt: "2026-11-20T10:00:00Z") { c in
            c.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)]
        }
    }

    static func send(_ endpoint: LiveEndpoint, _ body: [UInt8]) throws {
        let response = try httpRequest(port: endpoint.port, method: "POST", path: DemoPostbacks.adattributionkitPath, host: "app.example", body: body)
        #expect(response.status == 200, "\(response.bodyText)")
    }

    static func admin(_ endpoint: LiveEndpoint, _ method: String, _ body: String, token: String = "test-token") -> RawResponse {
        endpoint.request(method, "/api/apps", headers: [("Authorization", "Bearer \(token)")], body: Array(body.utf8))
    }

    /// The crosstab's rows as "campaign version|ambiguous versions: column=count …".
    static func crosstab(_ endpoint: LiveEndpoint) throws -> (rows: Set<String>, ambiguous: Int) {
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-01&to=2026-12-31"))
        let table = summary["crosstab"] as! [String: Any]
        let columns = (table["columns"] as! [[String: Any]]).map { "\($0["tier"]!):\($0["meaning"]!)" }
        let rows = (table["rows"] as! [[String: Any]]).map { row -> String in
            let counts = (row["counts"] as! [Int]).enumerated().filter { $0.element > 0 }.map { "\(columns[$0.offset])=\($0.element)" }
            return "\(row["campaign"]!) \(row["schema_version"] as? Int ?? 0)|\(row["schema_ambiguous_versions"]!): " + counts.joined(separator: " ")
        }
        let versions = summary["schema_versions"] as! [String: Any]
        return (Set(rows), versions["ambiguous_postbacks"] as! Int)
    }

    @Test func postbacksOnBothSidesOfAChangeAndAcrossItReadWithTheirOwnVersion() throws {
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory)
        #expect(Self.admin(endpoint, "POST", Self.v1).status == 201)
        // Before the change: value 12 is a purchase.
        try Self.send(endpoint, Self.postback(1, index: 0, value: #""conversion-value":12"#))
        endpoint.clock.set("2026-11-21T00:00:00Z")
        let changed = Self.admin(endpoint, "PUT", Self.v2)
        #expect(changed.status == 200, "\(changed.bodyText)")
        let versions = (json(changed)["schema_versions"] as! [[String: Any]])
        #expect(versions.map { $0["version"] as! Int } == [1, 2])
        #expect(versions[0]["effective_from"] is NSNull && versions[1]["effective_from"] as? String == "2026-11-21T00:00:00.000Z")
        // Half a day after: its value was set at least 24 h before it left, under version 1.
        endpoint.clock.set("2026-11-21T12:00:00Z")
        try Self.send(endpoint, Self.postback(2, index: 0, value: #""conversion-value":12"#))
        // Two days after: its window spans the change. A second-window postback four days after too.
        endpoint.clock.set("2026-11-23T00:00:00Z")
        try Self.send(endpoint, Self.postback(3, index: 0, value: #""conversion-value":12"#))
        endpoint.clock.set("2026-11-25T00:00:00Z")
        try Self.send(endpoint, Self.postback(4, index: 1, value: #""coarse-conversion-value":"high""#))
        // Thirteen days after (its window, its delay and nine days of retries): wholly under
        // version 2, where 12 is a level.
        endpoint.clock.set("2026-12-04T00:00:00Z")
        try Self.send(endpoint, Self.postback(5, index: 0, value: #""conversion-value":12"#))

        let expected: Set<String> = ["5678 1|: fine:purchase=2", "5678 0|1-2: ambiguous:fine 12=1", "56 0|1-2: ambiguous:coarse high=1",
                                     "5678 2|: fine:level=1"]
        let (rows, ambiguous) = try Self.crosstab(endpoint)
        #expect(rows == expected)
        #expect(ambiguous == 2)
        let summary = json(try endpoint.get("/api/apps/summary?site=app.example&from=2026-11-01&to=2026-12-31"))
        // Value 12 means different things under the two versions: the list of values names none.
        #expect((summary["fine_values"] as! [[String: Any]]).first { $0["value"] as? Int == 12 }?["meaning"] is NSNull)
        let used = ((summary["schema_versions"] as! [String: Any])["used"] as! [[String: Any]]).map { "\($0["version"]!)=\($0["postbacks"]!)" }
        #expect(used == ["1=2", "2=1"])

        // The exports name the version of each, or the versions it could be.
        let rows2 = try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(rows2.map { "\($0["schema_version"] as? Int ?? 0)\($0["schema_ambiguous_versions"] as! String)" } == ["1", "1", "01-2", "01-2", "2"])
        let csv = try endpoint.get("/api/postbacks.csv").bodyText.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let column = try #require(csv[0].firstIndex(of: "schema_version"))
        #expect(csv.dropFirst().map { "\($0[column])/\($0[column + 1])" } == ["1/", "1/", "/1-2", "/1-2", "2/"])
        let crosstabCSV = try endpoint.get("/api/apps/summary/crosstab.csv?site=app.example&from=2026-11-01&to=2026-12-31").bodyText
        #expect(crosstabCSV.hasPrefix("ad_network,ad_network_name,campaign,campaign_name,app_id,app_name,schema_version,schema_ambiguous_versions,"))
        #expect(crosstabCSV.contains(",1-2,"))

        // A restart takes the sealed days from their digests, and reads the rest of the log, to
        // the same numbers.
        endpoint.server.digests.sweep()
        #expect(endpoint.server.digests.count >= 4)
        endpoint.stop()
        endpoint = try Self.start(directory)
        defer { endpoint.stop() }
        #expect(endpoint.server.startedFromDigests >= 4)
        endpoint.clock.set("2026-12-05T00:00:00Z")
        endpoint.server.waitUntilPostbacksReady()
        #expect(try Self.crosstab(endpoint).rows == expected)
    }

    @Test func changesGoThroughTheSameChecksAndVersionsOutliveTheirApp() throws {
        let endpoint = try Self.start(temporaryDirectory())
        defer { endpoint.stop() }
        // Nothing to change yet.
        let unknown = Self.admin(endpoint, "PUT", Self.v1)
        #expect(unknown.status == 404 && json(unknown)["rule"] as? String == "unknown_app" && json(unknown)["field"] as? String == "app_id")
        #expect(Self.admin(endpoint, "POST", Self.v1).status == 201)
        // A change breaks the same rules as a registration, naming the field; nothing changes.
        let overlapping = Self.admin(endpoint, "PUT", Self.app(#"{"from":0,"to":9,"meaning":"a"},{"from":9,"to":63,"meaning":"b"}"#))
        #expect(overlapping.status == 422 && json(overlapping)["field"] as? String == "schema.fine[1]")
        for body in ["", "[]", "{", #"{"app_id":"x"}"#, Self.v1.replacingOccurrences(of: "app.example", with: "elsewhere.example")] {
            let refused = Self.admin(endpoint, "PUT", body)
            #expect((400..<500).contains(refused.status), "\(body): \(refused.status)")
        }
        // A new name alone is no new version.
        #expect(Self.admin(endpoint, "PUT", Self.app(#"{"from":0,"to":9,"meaning":"tutorial"},{"from":10,"to":63,"meaning":"purchase"}"#, name: "Renamed")).status == 200)
        func versions() throws -> [Int] {
            let apps = try JSONSerialization.jsonObject(with: Data(try endpoint.get("/api/apps").body)) as! [[String: Any]]
            return (apps.first?["schema_versions"] as? [[String: Any]] ?? []).map { $0["version"] as! Int }
        }
        #expect(try versions() == [1])
        endpoint.clock.set("2026-11-22T00:00:00Z")
        #expect(Self.admin(endpoint, "PUT", Self.v2).status == 200)
        #expect(try versions() == [1, 2])
        // Removed and registered again with its first schema: a third version, none lost.
        #expect(endpoint.request("DELETE", "/api/apps?app_id=\(Self.appID)", headers: [("Authorization", "Bearer test-token")]).status == 204)
        endpoint.clock.set("2026-11-23T00:00:00Z")
        #expect(Self.admin(endpoint, "POST", Self.v1).status == 201)
        #expect(try versions() == [1, 2, 3])
        // A token the endpoint does not know changes nothing (a viewer's: AccessTests walks every route).
        let stranger = Self.admin(endpoint, "PUT", Self.v2, token: "no-such-token")
        #expect(try stranger.status == 401 && versions() == [1, 2, 3])
    }
}
