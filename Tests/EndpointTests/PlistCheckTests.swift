import Foundation
import RawHTTPClient
import Testing

/// `POST /api/plist-check` and `attribution-endpoint check-plist`: the app developer's Info.plist
/// against the sites this endpoint serves.
@Suite struct PlistCheckTests {
    static let wellConfigured = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict>
          <key>AdAttributionKitConfigurations</key><dict>
            <key>AttributionWindows</key><dict>
              <key>global</key><dict><key>install</key><dict><key>view</key><integer>3</integer></dict></dict>
            </dict>
          </dict>
          <key>NSAdvertisingAttributionReportEndpoint</key><string>https://news.example</string>
          <key>AttributionCopyEndpoint</key><string>https://elsewhere.example</string>
        </dict></plist>
        """

    @Test func theAPIChecksAgainstTheServedSitesOverHTTP() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let response = try httpRequest(port: endpoint.port, method: "POST", path: "/api/plist-check",
                                       headers: [("Authorization", "Bearer test-token"), ("Content-Type", "application/x-plist")],
                                       body: Array(Self.wellConfigured.utf8))
        #expect(response.status == 200)
        let report = json(response)
        #expect(report["format"] as? String == "xml")
        #expect(report["errors"] as? Int == 1)
        let findings = report["findings"] as? [[String: Any]] ?? []
        #expect(findings.map { $0["rule"] as? String } == ["site_not_served"])
        #expect(findings.first?["key"] as? String == "AttributionCopyEndpoint")
        let endpoints = report["endpoints"] as? [[String: Any]] ?? []
        #expect(endpoints.map { $0["served"] as? Bool } == [true, false])
        let global = (report["windows"] as? [[String: Any]])?.first
        #expect((global?["view"] as? [String: Any])?["value"] as? Int == 3)
        #expect((global?["view"] as? [String: Any])?["source"] as? String == "global")
    }

    @Test func theAPINeedsTheTokenAndAPlist() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/plist-check", body: Array(Self.wellConfigured.utf8)).status == 401)
        let auth = [("Authorization", "Bearer test-token")]
        let notAPlist = endpoint.request("POST", "/api/plist-check", headers: auth, body: Array("{\"a\":1}".utf8))
        #expect(notAPlist.status == 422 && json(notAPlist)["rule"] as? String == "not_a_property_list")
        #expect(json(notAPlist)["field"] as? String == "body")
        let empty = endpoint.request("POST", "/api/plist-check", headers: auth)
        #expect(empty.status == 400 && json(empty)["rule"] as? String == "empty_body")
        #expect(endpoint.request("GET", "/api/plist-check", headers: auth).status == 405)
    }

    @Test func theCommandExitsNonZeroOnErrorsAndPrintsJSON() throws {
        let directory = temporaryDirectory()
        let file = directory + "/Info.plist"
        try Self.wellConfigured.write(toFile: file, atomically: true, encoding: .utf8)
        let served = try runEndpoint(["check-plist", file, "--site", "news.example", "--site", "elsewhere.example"])
        #expect(served.status == 0, "\(served.output)")
        #expect(served.output.contains("0 errors"))
        #expect(served.output.contains("global  30     system_default  3     global"), "\(served.output)")
        let notServed = try runEndpoint(["check-plist", file, "--site", "news.example", "--json"])
        #expect(notServed.status == 1)
        let report = try JSONSerialization.jsonObject(with: Data(notServed.output.utf8)) as? [String: Any]
        #expect(report?["errors"] as? Int == 1)
        let config = directory + "/config.json"
        try #"{"sites": ["news.example", "elsewhere.example"]}"#.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try runEndpoint(["check-plist", file, "--config", config]).status == 0)
        try "hello".write(toFile: file, atomically: true, encoding: .utf8)
        let garbage = try runEndpoint(["check-plist", file])
        #expect(garbage.status == 65 && garbage.output.contains("is neither an XML nor a binary property list"))
        #expect(try runEndpoint(["check-plist"]).status == 64)
    }
}
