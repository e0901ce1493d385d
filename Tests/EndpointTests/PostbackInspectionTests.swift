import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// Paste and verify (`POST /api/postbacks/verify`): any postback pasted in is read, checked and
/// looked up, and nothing is stored. Apple's own examples, the generated vectors, a bare JWS, and
/// hostile pastes.
@Suite struct PostbackInspectionTests {
    func verify(_ endpoint: LiveEndpoint, _ body: [UInt8], token: String = "test-token") -> RawResponse {
        endpoint.request("POST", "/api/postbacks/verify", headers: [("Authorization", "Bearer \(token)")], body: body)
    }

    @Test func applesExamplesAreExplainedAndNothingIsStored() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        #expect(endpoint.request("POST", "/api/apps", headers: [("Authorization", "Bearer test-token")], body: Array(AppsTests.app.utf8)).status == 201)
        for (name, value) in try PostbackPathTests.vectors("skadnetwork_postbacks") {
            let entry = value as! [String: Any]
            let body = try JSONSerialization.data(withJSONObject: entry["postback"]!)
            let response = verify(endpoint, Array(body))
            #expect(response.status == 200, "\(name): \(response.bodyText)")
            let answer = json(response)
            let signature = try #require(answer["signature"] as? [String: Any])
            #expect(answer["protocol"] as? String == "skadnetwork" && answer["version"] as? String != nil)
            if entry["expect_valid"] as! Bool {
                #expect(signature["outcome"] as? String == "apple" && signature["key"] as? String == "apple-skadnetwork-p256", "\(name): \(signature)")
            } else {
                #expect(signature["outcome"] as? String == "invalid" && (signature["explanation"] as? String ?? "").contains("no key verifies it"), "\(name)")
            }
            #expect((answer["seen"] as? [String: Any])?["stored"] as? Bool == false)
        }
        for (name, value) in try PostbackPathTests.vectors("adattributionkit_postbacks") {
            let entry = value as! [String: Any]
            let copy = try JSONSerialization.data(withJSONObject: entry["body"]!)
            let jws = try #require((entry["body"] as? [String: Any])?["jws-string"] as? String)
            // The copy as the device sends it, and its bare JWS pasted alone, with a newline.
            for body in [Array(copy), Array((jws + "\n").utf8)] {
                let answer = json(verify(endpoint, body))
                let signature = try #require(answer["signature"] as? [String: Any], "\(name)")
                #expect(answer["protocol"] as? String == "adattributionkit")
                if entry["expect_valid"] as! Bool {
                    #expect(signature["outcome"] as? String == "apple_development" && signature["key"] as? String == "apple-development-identifier/1",
                            "\(name): \(signature)")
                    #expect((signature["explanation"] as? String ?? "").contains("development postback"))
                    #expect(answer["verdict"] as? String == "quarantined" && (answer["reasons"] as? [String])?.contains("development_postback") == true)
                } else {
                    #expect(signature["outcome"] as? String == "invalid", "\(name): \(signature)")
                }
                #expect((answer["fields"] as? [String: Any])?["postback-identifier"] != nil, "\(name): the payload's fields")
            }
        }
        // Nothing pasted is stored.
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
    }

    @Test func theAppsSchemaDecodesTheValueAndTheLedgerIsConsulted() throws {
        let document = try PostbackPathTests.vectors("generated_postbacks")
        let endpoint = try LiveEndpoint(sites: ["app.example"]) { configuration in
            configuration.postbackKeys = [(document["test_key_name"] as! String, document["test_key_spki"] as! String)]
        }
        defer { endpoint.stop() }
        let vectors = document["vectors"] as! [[String: Any]]
        let signed = try #require(vectors.first { $0["signature"] as? String == "test_key" && ($0["body"] as! String).contains("\"conversion-value\"") })
        let body = Array((signed["body"] as! String).utf8)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let appID = try #require((fields["app-id"] ?? fields["advertised-item-identifier"]) as? Int)
        let value = try #require(fields["conversion-value"] as? Int)
        let app = AppsTests.app.replacingOccurrences(of: "1000000003", with: String(appID))
        #expect(endpoint.request("POST", "/api/apps", headers: [("Authorization", "Bearer test-token")], body: Array(app.utf8)).status == 201)

        var answer = json(verify(endpoint, body))
        #expect((answer["signature"] as? [String: Any])?["outcome"] as? String == "test_key")
        #expect((answer["app"] as? [String: Any])?["name"] as? String == "Example Game")
        let decoded = try #require(answer["conversion_value"] as? [String: Any])
        #expect(decoded["value"] as? Int == value && decoded["meaning"] as? String == (value <= 9 ? "tutorial" : "purchase"), "\(decoded)")
        #expect((answer["seen"] as? [String: Any])?["stored"] as? Bool == false)

        // Once a device has sent it, the paste says so, with its id.
        let path = (signed["protocol"] as? String) == "skadnetwork" ? PostbackPathTests.skadnetwork : PostbackPathTests.adattributionkit
        let sent = try httpRequest(port: endpoint.port, method: "POST", path: path, host: "app.example", body: body)
        #expect(sent.status == 200)
        answer = json(verify(endpoint, body))
        let seen = try #require(answer["seen"] as? [String: Any])
        #expect(seen["stored"] as? Bool == true && seen["id"] as? Int == json(sent)["id"] as? Int, "\(seen)")
    }

    /// Whatever is pasted: a clear 4xx naming the rule, never a 5xx; a viewer token may not ask.
    @Test func hostilePastesAreRefusedClearly() throws {
        let endpoint = try LiveEndpoint(sites: ["app.example"])
        defer { endpoint.stop() }
        let huge = [UInt8](repeating: UInt8(ascii: "a"), count: 200_000)
        let cases: [([UInt8], Int, String)] = [
            ([], 400, "empty_body"),
            (Array(" \n\t ".utf8), 400, "empty_body"),
            (Array("{".utf8), 400, "malformed_json"),
            (Array("{}".utf8), 400, "not_a_postback"),
            (Array("[1,2]".utf8), 400, "not_a_postback"),
            (Array("hello".utf8), 400, "not_a_postback"),
            (Array("a.b".utf8), 400, "not_a_postback"),
            (Array("a.b.c.d".utf8), 400, "not_a_postback"),
            (Array("é.ü.ß".utf8), 400, "not_a_postback"),
            ([0xFF, 0xFE, 0x00, 0x2E, 0x2E], 400, "not_a_postback"),
            (Array(#"{"jws-string":5}"#.utf8), 400, "not_a_postback"),
            (Array(#"{"ad-network-id":"x"}"#.utf8), 400, "not_a_postback"),
            (Array((String(repeating: "[", count: 10_000)).utf8), 400, "not_a_postback"),
            (huge, 413, "body_too_large"),
        ]
        for (body, status, rule) in cases {
            let response = verify(endpoint, body)
            #expect(response.status == status, "\(String(decoding: body.prefix(30), as: UTF8.self)): \(response.status) \(response.bodyText.prefix(200))")
            if !rule.isEmpty { #expect(json(response)["rule"] as? String == rule, "\(response.bodyText.prefix(200))") }
            #expect(json(response)["field"] != nil || status == 413 || rule.isEmpty, "a refusal names its field")
        }
        // A JWS that parses but is no AdAttributionKit postback, and one whose kid is nobody's.
        func b64(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let forged = b64(#"{"alg":"ES256","kid":"someone"}"#) + "." + b64(#"{"ad-network-identifier":"x","postback-identifier":"p","source-identifier":"12","advertised-item-identifier":1}"#) + "." + b64("sig")
        let answer = verify(endpoint, Array(forged.utf8))
        #expect(answer.status == 200, "\(answer.bodyText)")
        #expect((json(answer)["signature"] as? [String: Any])?["explanation"] as? String == "no key verifies it: its kid someone is not one of Apple's keys, nor a test key's")
        let none = b64(#"{"alg":"none"}"#) + "." + b64("{}") + "."
        #expect([200, 400].contains(verify(endpoint, Array(none.utf8)).status))
        // The same paste many times: answered each time, nothing kept.
        for _ in 0..<200 { #expect(verify(endpoint, Array(forged.utf8)).status == 200) }
        #expect(try endpoint.get("/api/postbacks").bodyText.isEmpty)
    }
}
