import Foundation
import Testing
import RawHTTPClient
@testable import Endpoint

@Suite struct ReportPathTests {
    @Test func storesAValidReportAndExportsItWithEveryField() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        endpoint.clock.set("2026-11-20T10:00:00Z")
        let response = try endpoint.post(reportBody(), host: "news.example")
        #expect(response.status == 201)
        #expect(response.header("Set-Cookie") == nil)
        let ack = json(response)
        #expect(ack["id"] as? Int == 1)
        #expect(ack["verdict"] as? String == "accepted")

        let lines = try endpoint.export()
        #expect(lines.count == 1)
        let line = lines[0]
        #expect(line["id"] as? Int == 1)
        #expect(line["received_at"] as? String == "2026-11-20T10:00:00.000Z")
        #expect(line["protocol"] as? String == "pcm")
        #expect(line["role"] as? String == "source")
        #expect(line["site"] as? String == "news.example")
        #expect(line["verdict"] as? String == "accepted")
        #expect((line["reasons"] as? [String]) == ["unverified_timing"], "no campaigns or triggers: the timing cannot be checked")
        #expect(line["source_engagement_type"] as? String == "click")
        #expect(line["source_site"] as? String == "news.example")
        #expect(line["source_id"] as? Int == 42)
        #expect(line["attributed_on_site"] as? String == "shop.example")
        #expect(line["trigger_data"] as? Int == 5)
        #expect(line["version"] as? Int == 3)
    }

    @Test func theTwoCopiesGetTheirRolesAndIdenticalBodiesAreNotDeduplicated() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        #expect(try endpoint.post(reportBody(), host: "shop.example:443").status == 201)
        #expect(try endpoint.post(reportBody(), host: "shop.example").status == 201)
        let lines = try endpoint.export()
        #expect(lines.map { $0["role"] as? String } == ["source", "destination", "destination"])
        #expect(lines.map { $0["site"] as? String } == ["news.example", "shop.example", "shop.example"])
        #expect(Set(lines.map { $0["id"] as? Int }).count == 3)
    }

    @Test func trailingSlashIsOptionalAndOnlyPOSTIsAllowed() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), path: "/.well-known/private-click-measurement/report-attribution").status == 201)
        let get = try httpRequest(port: endpoint.port, method: "GET", path: "/.well-known/private-click-measurement/report-attribution/")
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
        #expect(try httpRequest(port: endpoint.port, method: "GET", path: "/nothing").status == 404)
    }

    @Test func invalidReportsGetProblemJSONNamingFieldAndRuleAndAreNotStored() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let cases: [(String, Int, String, String?)] = [
            (reportBody(sourceID: 256), 422, "out_of_range", "source_id"),
            (reportBody(triggerData: 16), 422, "out_of_range", "trigger_data"),
            (reportBody().replacingOccurrences(of: "42", with: "\"42\""), 422, "wrong_type", "source_id"),
            (reportBody(destination: "co.uk"), 422, "not_registrable_domain", "attributed_on_site"),
            (reportBody(destination: "news.example"), 422, "same_site", "attributed_on_site"),
            (reportBody().replacingOccurrences(of: "click", with: "view"), 422, "not_click", "source_engagement_type"),
            ("{not json", 400, "malformed_json", nil),
            ("[1,2,3]", 400, "not_an_object", nil),
            (reportBody(extra: ",\"source_id\":1"), 400, "duplicate_key", "source_id"),
        ]
        for (body, status, rule, field) in cases {
            let response = try endpoint.post(body)
            #expect(response.status == status, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
            let problem = json(response)
            #expect(problem["rule"] as? String == rule)
            #expect(problem["field"] as? String == field)
            #expect(problem["status"] as? Int == status)
            #expect((problem["detail"] as? String)?.isEmpty == false)
            #expect((problem["type"] as? String)?.hasSuffix(rule) == true)
        }
        #expect(try endpoint.export().isEmpty)

        // The site owner can see what was refused and why.
        let rejections = json(try endpoint.get("/api/rejections"))
        let counts = rejections["counts"] as? [String: Int] ?? [:]
        #expect(counts["out_of_range"] == 2)
        #expect(counts.values.reduce(0, +) == cases.count)
        let recent = rejections["recent"] as? [[String: Any]] ?? []
        #expect(recent.count == cases.count)
        #expect(recent.first?["body"] as? String == cases[0].0)
    }

    @Test func contentTypeMustBeJSON() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(), contentType: "text/plain").status == 415)
        #expect(try endpoint.post(reportBody(), contentType: nil).status == 415)
        #expect(try endpoint.post(reportBody(), contentType: "application/json; charset=utf-8").status == 201)
        #expect(try endpoint.post(reportBody(), contentType: "Application/JSON").status == 201)
    }

    @Test func oversizedReportGets413Problem() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let padding = String(repeating: "a", count: 9000)
        let response = try endpoint.post(reportBody(extra: ",\"pad\":\"\(padding)\""))
        #expect(response.status == 413)
        #expect(json(response)["rule"] as? String == "body_too_large")
        // Past the HTTP layer's own limit, the connection is refused before the body is read.
        let huge = try endpoint.post(String(repeating: "x", count: 70_000))
        #expect(huge.status == 413)
    }

    @Test func reportsForSitesNotServedAreRefusedWithTheReason() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let notServed = try endpoint.post(reportBody(), host: "elsewhere.example")
        #expect(notServed.status == 421)
        #expect(json(notServed)["rule"] as? String == "site_not_served")
        #expect((json(notServed)["detail"] as? String)?.contains("elsewhere.example") == true)
        let mismatch = try endpoint.post(reportBody(sourceSite: "a.example", destination: "b.example"), host: "news.example")
        #expect(mismatch.status == 422)
        #expect(json(mismatch)["rule"] as? String == "site_mismatch")
    }

    @Test func forwardedHostIsBelievedOnlyFromTrustedProxies() throws {
        let trusting = try LiveEndpoint(trustedProxies: ["127.0.0.0/8"])
        defer { trusting.stop() }
        let viaProxy = try trusting.post(reportBody(), host: "internal:8080", headers: [("X-Forwarded-Host", "shop.example")])
        #expect(viaProxy.status == 201)
        #expect(json(viaProxy)["role"] as? String == "destination")

        let untrusting = try LiveEndpoint(trustedProxies: ["10.0.0.0/8"])
        defer { untrusting.stop() }
        let spoofed = try untrusting.post(reportBody(), host: "news.example", headers: [("X-Forwarded-Host", "shop.example")])
        #expect(json(spoofed)["role"] as? String == "source", "a client cannot pick its role with a header")
    }

    @Test func developmentModeAcceptsWebKitsTestSitesAndTakesRoleFromTheBody() throws {
        let endpoint = try LiveEndpoint(sites: [], dev: true)
        defer { endpoint.stop() }
        let webkit = #"{"source_engagement_type":"click","source_site":"127.0.0.1","source_id":42,"attributed_on_site":"example.com","trigger_data":12,"version":3}"#
        let response = try endpoint.post(webkit, host: "localhost:\(endpoint.port)")
        #expect(response.status == 201)
        #expect((json(response)["reasons"] as? [String]) == ["role_from_body", "unverified_timing"])
        let production = try LiveEndpoint()
        defer { production.stop() }
        #expect(try production.post(webkit, host: "example.com").status == 422)
    }

    @Test func unknownFieldsAndDashNamedBodiesAreKept() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        #expect(try endpoint.post(reportBody(extra: #","id":"not ours","campaign":{"x":[1]}"#)).status == 201)
        let dashed = #"{"source-engagement-type":"click","source-site":"news.example","source-id":7,"attributed-on-site":"shop.example","trigger-data":3,"report-version":1}"#
        #expect(try endpoint.post(dashed).status == 201)
        let lines = try endpoint.export()
        #expect(lines[0]["id"] as? Int == 1, "an unknown field never overrides the endpoint's own")
        let extra = lines[0]["extra"] as? [String: Any]
        #expect(extra?["id"] as? String == "not ours")
        #expect((extra?["campaign"] as? [String: Any])?["x"] as? [Int] == [1])
        #expect(lines[1]["source_id"] as? Int == 7)
        #expect(lines[1]["version"] as? Int == 1)
        #expect((lines[1]["reasons"] as? [String]) == ["dash_keys_normalized", "unverified_timing"])
    }

    @Test func tokensAreExportedUnderTheirWireNames() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let token = "7JgS5aIQPUm9T5DcT2a91NC1lt2xq5bLjuaJi4A_Wbg"
        let body = reportBody(extra: #","source_secret_token":"\#(token)","source_secret_token_signature":"\#(token)""#)
        #expect(try endpoint.post(body).status == 201)
        let line = try endpoint.export()[0]
        #expect(line["source_secret_token"] as? String == token)
        #expect(line["source_secret_token_signature"] as? String == token)
        #expect(line["destination_secret_token"] == nil)
    }

    @Test func nothingAboutTheSenderIsStoredAndNoCookieIsSet() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let marker = "UA-MARKER-\(UUID().uuidString)"
        let response = try endpoint.post(reportBody(), headers: [("User-Agent", marker), ("Cookie", "session=abc")])
        #expect(response.status == 201)
        #expect(response.header("Set-Cookie") == nil)
        endpoint.stop()
        let log = try Data(contentsOf: URL(fileURLWithPath: endpoint.directory + "/reports.log"))
        #expect(log.range(of: Data(marker.utf8)) == nil)
        #expect(log.range(of: Data("127.0.0.1".utf8)) == nil)
        #expect(log.range(of: Data("session=abc".utf8)) == nil)
    }
}
