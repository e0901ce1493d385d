import Foundation
import Primitives
import RawHTTPClient
import Signatures
import Testing
@testable import Endpoint

/// `--token-key-rotation-days`: a successor made a day ahead and served on schedule, the old key
/// verifying what it signed through the overlap, then retired with its set of tokens.
@Suite struct TokenKeyRotationTests {
    let paths = TokenPathTests()

    /// A click's token signed by the key `key` the site serves now, finalized as the browser would.
    func signed(_ endpoint: LiveEndpoint, by key: TokenPublicKey) throws -> String {
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let blinding = try key.blind(token: token)
        let answer = try paths.exchange(endpoint, "POST", TokenPathTests.signPath, host: "news.example",
                                        body: TokenPathTests.signRequest(blinded: blinding.blindedMessage))
        let signature = try #require(blinding.finalize(blindSignature: Base64.decode(json(answer)["unlinkable_token"] as! String, urlSafe: true)!))
        return reportBody(extra: ",\"source_secret_token\":\"\(Base64URL.encode(token))\",\"source_secret_token_signature\":\"\(Base64URL.encode(signature))\"")
    }

    func reasons(_ response: RawResponse) -> [String] { json(response)["reasons"] as? [String] ?? [] }

    func nextKey(_ endpoint: LiveEndpoint) throws -> String? {
        (json(try endpoint.get("/api/token-keys"))["next_keys"] as? [String: Any])?["news.example"] as? String
    }

    @Test func aSuccessorIsMadeADayAheadServedOnScheduleAndTheOldKeyRetiresWithItsTokens() throws {
        // The test keys began to be served on 2026-01-01; the clock stands at 2026-11-20T10:00Z.
        let endpoint = try LiveEndpoint { $0.tokenKeyRotationDays = 30 }
        defer { endpoint.stop() }
        let rotation = try #require(endpoint.server.tokenKeyRotation)
        let old = try paths.servedKey(endpoint)
        let clickBefore = try signed(endpoint, by: old)
        let clickLongBefore = try signed(endpoint, by: old)

        // Its turn passed long ago: the successor is made now, and served a day from now.
        rotation.rotateDue()
        #expect(rotation.rotateDue().isEmpty, "one successor, however often it is asked")
        let listed = try endpoint.get("/api/token-keys")
        let keys = try #require(json(listed)["keys"] as? [[String: Any]]).filter { $0["site"] as? String == "news.example" }
        #expect(keys.map { $0["state"] as? String } == ["served", "scheduled"])
        #expect(keys[1]["serves_from"] as? String == "2026-11-21T10:00:00.000Z")
        // Announced a day ahead at least: kept at the clock's time, served a day later.
        #expect(keys[1]["created_at"] as? String == "2026-11-20T10:00:00.000Z")
        #expect(json(listed)["rotation_days"] as? Int == 30)
        #expect(try nextKey(endpoint) == "2026-11-21T10:00:00.000Z")
        let next = Timestamp(rfc3339: "2026-11-21T10:00:00.000Z")!.millisecondsSinceEpoch / 1000
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_token_key_next_rotation_timestamp_seconds{site=\"news.example\"} \(next)\n"))
        #expect(try paths.servedKey(endpoint) == old)

        // From its time on the successor is served and signs; the old key verifies what it signed.
        endpoint.clock.set("2026-11-21T10:00:01Z")
        let new = try paths.servedKey(endpoint)
        #expect(new != old)
        #expect(Base64URL.encode(new.keyID) == keys[1]["key_id"] as? String)
        #expect(reasons(try endpoint.post(clickBefore, host: "news.example")).contains("source_token_verified"))
        #expect(reasons(try endpoint.post(clickBefore, host: "news.example")).contains("source_token_replayed"))
        #expect(reasons(try endpoint.post(try signed(endpoint, by: new), host: "news.example")).contains("source_token_verified"))
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_tokens_remembered 2\n"))
        // The next turn is thirty days after the switch, and not due yet.
        #expect(try nextKey(endpoint) == "2026-12-21T10:00:00.000Z")
        #expect(rotation.rotateDue().isEmpty)

        // Nine days after the switch the old key is retired for good, and its tokens forgotten.
        endpoint.clock.set("2026-11-30T10:00:02Z")
        let late = try endpoint.post(clickLongBefore, host: "news.example")
        #expect(reasons(late).contains("source_token_key_retired"))
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_tokens_remembered 1\n"))

        // A day before the next turn its successor is made, for exactly the turn's time.
        endpoint.clock.set("2026-12-20T09:59:59Z")
        #expect(rotation.rotateDue().isEmpty)
        endpoint.clock.set("2026-12-20T10:00:00.000Z")
        #expect(rotation.rotateDue().map { "\($0.site) \($0.servesFrom.rfc3339)" } == ["news.example 2026-12-21T10:00:00.000Z", "shop.example 2026-12-21T10:00:00.000Z"])
    }

    @Test func aRotationByHandReplacesTheScheduledSuccessorAndOldKeysAreForgotten() throws {
        let endpoint = try LiveEndpoint { $0.tokenKeyRotationDays = 30 }
        defer { endpoint.stop() }
        let rotation = try #require(endpoint.server.tokenKeyRotation)
        let old = Base64URL.encode(try paths.servedKey(endpoint).keyID)
        rotation.rotateDue()
        func newsKeys() throws -> [[String: Any]] {
            try #require(json(try endpoint.get("/api/token-keys"))["keys"] as? [[String: Any]]).filter { $0["site"] as? String == "news.example" }
        }
        let scheduled = try #require(try newsKeys().last?["key_id"] as? String)
        // The key leaked: a rotation by hand, served now. The scheduled successor signed nothing
        // and goes, so that the site switches once.
        let byHand = endpoint.request("POST", "/api/token-keys", headers: [("Authorization", "Bearer test-token")],
                                      body: Array(#"{"site":"news.example"}"#.utf8))
        #expect(byHand.status == 201 && json(byHand)["state"] as? String == "served", "\(byHand.bodyText)")
        let hand = try #require(json(byHand)["key_id"] as? String)
        #expect(try newsKeys().map { $0["key_id"] as? String } == [old, hand])
        #expect(!(try endpoint.get("/api/token-keys").bodyText.contains(scheduled)))
        #expect(try nextKey(endpoint) == "2026-12-20T10:00:00.000Z")
        #expect(rotation.rotateDue().filter { $0.site == "news.example" }.isEmpty)
        // Eighteen days after it was replaced the old key is forgotten altogether.
        endpoint.clock.set("2026-12-08T09:59:59Z")
        #expect(try endpoint.server.tokenKeys.forgetOldKeys().isEmpty)
        endpoint.clock.set("2026-12-08T10:00:01Z")
        #expect(try endpoint.server.tokenKeys.forgetOldKeys().contains(old))
        #expect(try newsKeys().map { $0["key_id"] as? String } == [hand])
    }

    @Test func rotationIsRefusedInAClusterAndBelowThirtyDays() throws {
        for (days, cluster, refused) in [(29, false, true), (30, false, false), (90, true, true)] {
            var configuration = EndpointConfiguration()
            configuration.sites = ["news.example"]
            configuration.tokenKeyRotationDays = days
            configuration.cluster = cluster
            #expect((try? configuration.check()) == nil ? refused : !refused, "\(days) days, cluster \(cluster)")
        }
    }
}
