import Foundation
import Primitives
import RawHTTPClient
import Signatures
import Testing
@testable import Endpoint

/// PCM fraud prevention through the real server on port 0: the token key as WebKit fetches it, and
/// blind signatures a browser finalizes into a token signature that verifies with that key.
@Suite struct TokenPathTests {
    static let keyPath = "/.well-known/private-click-measurement/get-token-public-key/"
    static let signPath = "/.well-known/private-click-measurement/sign-unlinkable-token/"

    func exchange(_ endpoint: LiveEndpoint, _ method: String, _ path: String, host: String, body: String? = nil,
                  timeout: Double = 10) throws -> RawResponse {
        let client = try RawHTTPClient(port: endpoint.port, timeout: timeout)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        try client.send(head + "\r\n" + (body ?? ""))
        return try client.readResponse(bodyExpected: method != "HEAD")
    }

    /// `timeout`: a key being made takes seconds, and minutes under ThreadSanitizer on a busy machine.
    func servedKey(_ endpoint: LiveEndpoint, host: String = "news.example", timeout: Double = 10) throws -> TokenPublicKey {
        let response = try exchange(endpoint, "GET", Self.keyPath, host: host, timeout: timeout)
        #expect(response.status == 200)
        let text = try #require(json(response)["token_public_key"] as? String)
        return try TokenPublicKey(subjectPublicKeyInfo: try #require(Base64.decode(text, urlSafe: true)))
    }

    static func signRequest(side: String = "source", nonce: [UInt8] = Array(repeating: 7, count: 16), blinded: [UInt8]) -> String {
        let engagement = side == "source" ? "\"source_engagement_type\":\"click\"," : ""
        return "{\(engagement)\"\(side)_nonce\":\"\(Base64URL.encode(nonce))\",\"\(side)_unlinkable_token\":\"\(Base64URL.encode(blinded))\",\"version\":3}"
    }

    @Test func theKeyIsServedAsWebKitExpectsWithItsIDInMetrics() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let response = try exchange(endpoint, "GET", Self.keyPath, host: "news.example")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Set-Cookie") == nil && response.header("Location") == nil)
        let key = try servedKey(endpoint)
        #expect(key.bits == 4096)
        #expect(key == TestTokenKeys.key("news.example").publicKey)
        #expect(Base64URL.encode(key.subjectPublicKeyInfo).hasPrefix("MIICUjA9BgkqhkiG9w0BAQowMKANMAsGCWCGSAFlAwQCAqEaMBgGCSqGSIb3DQEBCDAL"))
        // Each site its own key; without the slash too.
        let shop = try servedKey(endpoint, host: "shop.example")
        #expect(shop != key)
        #expect(try exchange(endpoint, "GET", String(Self.keyPath.dropLast()), host: "shop.example").bodyText == response.bodyText.replacingOccurrences(of: Base64URL.encode(key.subjectPublicKeyInfo), with: Base64URL.encode(shop.subjectPublicKeyInfo)))
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains("attribution_token_key_info{site=\"news.example\",key_id=\"\(Base64URL.encode(key.keyID))\",state=\"served\"} 1"))
        let unserved = try exchange(endpoint, "GET", Self.keyPath, host: "elsewhere.example")
        #expect(unserved.status == 421)
        #expect(json(unserved)["rule"] as? String == "site_not_served")
    }

    @Test(arguments: ["source", "destination"])
    func aBlindSignatureFinalizesIntoATokenSignatureTheServedKeyVerifies(side: String) throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let host = side == "source" ? "news.example" : "shop.example"
        let key = try servedKey(endpoint, host: host)
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let blinding = try key.blind(token: token)
        let response = try exchange(endpoint, "POST", Self.signPath, host: host,
                                    body: Self.signRequest(side: side, blinded: blinding.blindedMessage))
        #expect(response.status == 200)
        #expect(response.header("Set-Cookie") == nil)
        let answer = try #require(json(response)["unlinkable_token"] as? String)
        let blindSignature = try #require(Base64.decode(answer, urlSafe: true))
        #expect(blindSignature.count == 512)
        let signature = try #require(blinding.finalize(blindSignature: blindSignature))
        #expect(key.isValidSignature(signature, for: token))
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_tokens_signed_total{side=\"\(side)\"} 1"))
    }

    @Test func everyRefusalNamesItsFieldAndRule() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let good = [UInt8](repeating: 1, count: 512)
        let cases: [(body: String, host: String, status: Int, rule: String, field: String?)] = [
            ("not json", "news.example", 400, "malformed_json", nil),
            ("[1]", "news.example", 400, "not_an_object", nil),
            (Self.signRequest(blinded: good).replacingOccurrences(of: "\"version\":3", with: "\"version\":2"), "news.example", 422, "unsupported_version", "version"),
            (Self.signRequest(blinded: good).replacingOccurrences(of: "\"click\"", with: "\"view\""), "news.example", 422, "unsupported_engagement_type", "source_engagement_type"),
            (Self.signRequest(nonce: Array(repeating: 1, count: 15), blinded: good), "news.example", 422, "invalid_nonce", "source_nonce"),
            (Self.signRequest(blinded: good).replacingOccurrences(of: "\"source_nonce\":\"", with: "\"source_nonce\":\"=="), "news.example", 422, "invalid_nonce", "source_nonce"),
            (Self.signRequest(blinded: Array(repeating: 1, count: 256)), "news.example", 422, "wrong_token_length", "source_unlinkable_token"),
            (Self.signRequest(blinded: good).replacingOccurrences(of: "_unlinkable_token\":\"", with: "_unlinkable_token\":\"+/"), "news.example", 422, "invalid_unlinkable_token", "source_unlinkable_token"),
            (Self.signRequest(blinded: Array(repeating: 0xFF, count: 512)), "news.example", 422, "token_not_below_modulus", "source_unlinkable_token"),
            (Self.signRequest(side: "destination", blinded: Array(repeating: 0xFF, count: 512)), "shop.example", 422, "token_not_below_modulus", "destination_unlinkable_token"),
            ("{\"source_engagement_type\":\"click\",\"version\":3}", "news.example", 422, "missing_field", "source_nonce"),
            (Self.signRequest(blinded: good), "elsewhere.example", 421, "site_not_served", "Host"),
        ]
        for c in cases {
            let response = try exchange(endpoint, "POST", Self.signPath, host: c.host, body: c.body)
            #expect(response.status == c.status, "\(c.body.prefix(80))")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(json(response)["rule"] as? String == c.rule, "\(c.body.prefix(80))")
            #expect(json(response)["field"] as? String == c.field, "\(c.body.prefix(80))")
        }
        let both = "{\"source_engagement_type\":\"click\",\"source_nonce\":\"AAAAAAAAAAAAAAAAAAAAAA\",\"destination_nonce\":\"AAAAAAAAAAAAAAAAAAAAAA\",\"version\":3}"
        #expect(json(try exchange(endpoint, "POST", Self.signPath, host: "news.example", body: both))["rule"] as? String == "both_sides")
        #expect(try exchange(endpoint, "GET", Self.signPath, host: "news.example").status == 405)
    }

    @Test func aFirstStartMakesAKeyKeepsItPrivateAndServesTheSameBytesAfterARestart() throws {
        let directory = temporaryDirectory()
        // made.example has no key yet: the endpoint makes one, and the key request waits for it.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try TestTokenKeys.seed(directory, sites: ["news.example"])
        let first = try LiveEndpoint(sites: ["news.example", "made.example"], directory: directory)
        let made = try servedKey(first, host: "made.example", timeout: 900)
        first.stop()
        let path = directory + "/token-keys.json"
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let second = try LiveEndpoint(sites: ["news.example", "made.example"], directory: directory)
        defer { second.stop() }
        #expect(try servedKey(second, host: "made.example") == made)
        #expect(try servedKey(second, host: "news.example") == TestTokenKeys.key("news.example").publicKey)
    }

    @Test func aScheduledSuccessorIsServedFromItsTimeAndTheOldKeyStillVerifiesWhatItSigned() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        let before = try servedKey(endpoint)
        // Two clicks signed by the old key: one reported after the switch, one far too late.
        func signedByTheServedKey() throws -> (token: [UInt8], signature: [UInt8]) {
            let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let blinding = try before.blind(token: token)
            let signed = try exchange(endpoint, "POST", Self.signPath, host: "news.example", body: Self.signRequest(blinded: blinding.blindedMessage))
            return (token, try #require(blinding.finalize(blindSignature: Base64.decode(json(signed)["unlinkable_token"] as! String, urlSafe: true)!)))
        }
        let (token, signature) = try signedByTheServedKey()
        let late = try signedByTheServedKey()
        let response = endpoint.request("POST", "/api/token-keys", headers: [("Authorization", "Bearer test-token")],
                                            body: Array("{\"site\":\"news.example\",\"serves_from\":\"2026-11-21T00:00:00Z\"}".utf8))
        #expect(response.status == 201)
        #expect(json(response)["state"] as? String == "scheduled")
        #expect(try servedKey(endpoint) == before)
        endpoint.clock.set("2026-11-21T00:00:01Z")
        let after = try servedKey(endpoint)
        #expect(after != before)
        #expect(Base64URL.encode(after.keyID) == json(response)["key_id"] as? String)
        let report = reportBody(extra: ",\"source_secret_token\":\"\(Base64URL.encode(token))\",\"source_secret_token_signature\":\"\(Base64URL.encode(signature))\"")
        let stored = try endpoint.post(report, host: "news.example")
        #expect((json(stored)["reasons"] as? [String] ?? []).contains("source_token_verified"))
        // The export names the key that verified it: the retired one.
        let row = try #require(try endpoint.export().first { $0["id"] as? Int == json(stored)["id"] as? Int })
        #expect(row["source_token_key_id"] as? String == Base64URL.encode(before.keyID))
        #expect(try endpoint.get("/api/reports.csv").bodyText.contains(",\(Base64URL.encode(before.keyID)),\r\n"))
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains("attribution_tokens_remembered 1\n"))
        // One token is far from the exact bound: no filter, no token found by mistake.
        #expect(metrics.contains("attribution_tokens_remembered_approximately 0\n"))
        #expect(metrics.contains("attribution_token_filter_false_positive_ratio 0.0\n"))
        #expect(metrics.contains("attribution_triggers_forgotten_early_total 0\n"))
        // Nine days after the switch no browser can send what the old key signed: quarantined,
        // and what it signed is no longer remembered.
        endpoint.clock.set("2026-11-30T00:00:01Z")
        let tooLate = try endpoint.post(reportBody(extra: ",\"source_secret_token\":\"\(Base64URL.encode(late.token))\",\"source_secret_token_signature\":\"\(Base64URL.encode(late.signature))\""),
                                        host: "news.example")
        #expect((json(tooLate)["reasons"] as? [String] ?? []).contains("source_token_key_retired"))
        #expect(json(tooLate)["verdict"] as? String == "quarantined")
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_tokens_remembered 0\n"))
        let listed = try endpoint.get("/api/token-keys").bodyText
        #expect(listed.contains("\"key_id\":\"\(Base64URL.encode(before.keyID))\",\"state\":\"retired\""))
        #expect(listed.contains("\"key_id\":\"\(Base64URL.encode(after.keyID))\",\"state\":\"served\""))
        let refused = endpoint.request("POST", "/api/token-keys", headers: [("Authorization", "Bearer test-token")],
                                       body: Array("{\"site\":\"news.example\",\"serves_from\":\"2020-01-01T00:00:00Z\"}".utf8))
        #expect(refused.status == 422 && json(refused)["rule"] as? String == "time_in_the_past")
        #expect(endpoint.request("POST", "/api/token-keys", body: Array("{}".utf8)).status == 401)
    }
}

/// Tokens in reports: checked with the key of the site that signed them, remembered once verified.
@Suite struct ReportTokenTests {
    struct Example: Decodable {
        var token_public_key: String
        var secret_token: String
        var secret_token_signature: String
    }

    /// WebKit's published key, token and signature (Resources/token-keys, from the project's vectors).
    static let example: Example = {
        let url = Bundle.module.url(forResource: "token-keys/pcm_token_example", withExtension: "json")!
        return try! JSONDecoder().decode(Example.self, from: Data(contentsOf: url))
    }()

    static func pair(_ side: String, token: String, signature: String) -> String {
        ",\"\(side)_secret_token\":\"\(token)\",\"\(side)_secret_token_signature\":\"\(signature)\""
    }

    func reasons(_ response: RawResponse) -> [String] { json(response)["reasons"] as? [String] ?? [] }

    @Test func webKitsTokenVerifiesWithItsKeyGivenForItsSiteAndAOneBitChangeDoesNot() throws {
        let e = Self.example
        let endpoint = try LiveEndpoint(sites: ["shop.example"]) { $0.tokenPublicKeys = [("news.example", e.token_public_key)] }
        defer { endpoint.stop() }
        let good = try endpoint.post(reportBody(extra: Self.pair("source", token: e.secret_token, signature: e.secret_token_signature)),
                                     host: "shop.example")
        #expect(good.status == 201)
        #expect(reasons(good).contains("source_token_verified"))
        #expect(json(good)["verdict"] as? String == "accepted")
        // One bit of the token changed: the signature no longer matches.
        var token = Base64.decode(e.secret_token, urlSafe: true)!
        token[0] ^= 0x01
        let flipped = try endpoint.post(reportBody(extra: Self.pair("source", token: Base64URL.encode(token), signature: e.secret_token_signature)),
                                        host: "shop.example")
        #expect(reasons(flipped).contains("source_token_invalid"))
        #expect(json(flipped)["verdict"] as? String == "quarantined")
        // The same click reported again to the same role.
        let again = try endpoint.post(reportBody(extra: Self.pair("source", token: e.secret_token, signature: e.secret_token_signature)),
                                      host: "shop.example")
        #expect(reasons(again).contains("source_token_replayed"))
        #expect(json(again)["verdict"] as? String == "quarantined")
    }

    @Test func aTokenSignedByTheLiveEndpointVerifiesOnceAndIsAReplayAfterARestart() throws {
        let directory = temporaryDirectory()
        var endpoint = try LiveEndpoint(directory: directory)
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let tokenPaths = TokenPathTests()
        let key = try tokenPaths.servedKey(endpoint, host: "news.example")
        let blinding = try key.blind(token: token)
        let signed = try tokenPaths.exchange(endpoint, "POST", TokenPathTests.signPath, host: "news.example",
                                             body: TokenPathTests.signRequest(blinded: blinding.blindedMessage))
        let signature = try #require(blinding.finalize(blindSignature: Base64.decode(json(signed)["unlinkable_token"] as! String, urlSafe: true)!))
        let body = reportBody(extra: Self.pair("source", token: Base64URL.encode(token), signature: Base64URL.encode(signature)))
        // The click's site gets its copy, and so does the conversion's: one role each.
        #expect(reasons(try endpoint.post(body, host: "news.example")).contains("source_token_verified"))
        #expect(reasons(try endpoint.post(body, host: "shop.example")).contains("source_token_verified"))
        #expect(reasons(try endpoint.post(body, host: "news.example")).contains("source_token_replayed"))
        // The page's numbers: two reports with a verified token, one per role, in the totals and
        // in their campaign's row; the replay among the quarantined.
        let summary = json(try endpoint.get("/api/summary?from=2026-11-20&to=2026-11-20"))
        let tokens = try #require(summary["tokens"] as? [String: [String: Int]])
        #expect(tokens["verified"] == ["source": 1, "destination": 1])
        #expect(tokens["with_tokens"] == ["source": 2, "destination": 1])
        let campaignRows = try #require(summary["by_campaign"] as? [[String: Any]])
        #expect(campaignRows.count == 1 && campaignRows[0]["verified_tokens"] as? [String: Int] == ["source": 1, "destination": 1])
        let conversionRows = try #require(summary["by_conversion"] as? [[String: Any]])
        #expect(conversionRows.count == 1 && conversionRows[0]["verified_tokens"] as? [String: Int] == ["source": 1, "destination": 1])
        let quarantined = try #require(summary["quarantined_by_reason"] as? [[String: Any]])
        #expect(quarantined.contains { $0["reason"] as? String == "source_token_replayed" && $0["source"] as? Int == 1 })
        endpoint.stop()
        endpoint = try LiveEndpoint(directory: directory)
        defer { endpoint.stop() }
        #expect(reasons(try endpoint.post(body, host: "shop.example")).contains("source_token_replayed"))
        // A token from a site nobody has a key for is kept, with a note.
        let foreign = reportBody(sourceSite: "elsewhere.example", extra: Self.pair("source", token: Base64URL.encode(token), signature: Base64URL.encode(signature)))
        let unverifiable = try endpoint.post(foreign, host: "shop.example")
        #expect(reasons(unverifiable).contains("source_token_unverifiable"))
        #expect(!reasons(unverifiable).contains("source_token_invalid"))
    }

    @Test func requiredTokensQuarantineAReportWithout() throws {
        let endpoint = try LiveEndpoint { $0.requireTokens = true }
        defer { endpoint.stop() }
        let response = try endpoint.post(reportBody(), host: "shop.example")
        #expect(response.status == 201)
        #expect(reasons(response).contains("token_missing"))
        #expect(json(response)["verdict"] as? String == "quarantined")
    }
}
