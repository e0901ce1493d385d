import AdAttributionKit
import Postbacks
import SKAdNetwork
import Primitives
import Testing

/// Every public and generated vector through the rules and the keyring: what the export's
/// `signature` column will say for each.
@Suite struct SignatureVectorTests {
    private func read(_ proto: AttributionProtocol, _ body: [UInt8]) throws -> Postback {
        try Postback.parse(body).flatMap { Postback.read(proto, json: $0) }.get()
    }

    @Test func applesSKAdNetworkExamplesVerifyAndTamperedOnesDoNot() throws {
        let keyring = try PostbackKeyring()
        let vectors = try VectorFiles.appleSKAdNetwork()
        #expect(vectors.count == 8)
        for vector in vectors {
            let outcome = keyring.check(try read(.skadnetwork, vector.body)).outcome
            #expect(outcome == (vector.valid ? .apple : .invalid), "\(vector.name)")
        }
    }

    @Test func applesAdAttributionKitExamples() throws {
        let keyring = try PostbackKeyring()
        for vector in try VectorFiles.appleAdAttributionKit() {
            let postback = try read(.adattributionkit, vector.body)
            let outcome = keyring.check(postback).outcome
            if vector.name == "apple_doc_developer_settings" {
                // The header escapes `/` as `\/`: it verifies only over the segments as sent.
                #expect(postback.kid == "apple-development-identifier/1")
                #expect(outcome == .appleDevelopment)
                #expect(postback.reasons.isEmpty)
            } else {
                #expect(outcome == .invalid, "\(vector.name)")
                #expect(postback.kid == "apple-cas-identifier/0")
            }
        }
    }

    @Test func generatedVectorsVerifyWithTheirKeyOnly() throws {
        let generated = try VectorFiles.generated()
        let trusting = try PostbackKeyring(testKeys: [(generated.keyName, generated.keySPKI)])
        let plain = try PostbackKeyring()
        #expect(generated.vectors.count >= 90)
        for vector in generated.vectors {
            let proto = try #require(AttributionProtocol.allCases.first { $0.name == vector.protocol })
            let postback = try read(proto, vector.body)
            let check = trusting.check(postback)
            #expect(check.outcome.name == vector.signature, "\(vector.name)")
            if check.outcome == .testKey { #expect(check.keyName == generated.keyName) }
            // Without the key, what it signed is not Apple's.
            let untrusted = plain.check(postback).outcome
            #expect(untrusted == (vector.signature == "unverifiable" ? .unverifiable : .invalid), "\(vector.name)")
            let judged = PostbackVerdict.judge(postback, signature: check, developmentMode: false, conflictsWithEarlier: false)
            let expectedReasons = vector.signature == "unverifiable" ? ["signature_unverifiable"] : vector.reasons
            #expect(judged.reasons == expectedReasons, "\(vector.name)")
            #expect(judged.verdict == (vector.signature == "invalid" ? .quarantined : .accepted), "\(vector.name)")
        }
    }

    @Test func aTestKeyNeverPassesForApple() throws {
        let generated = try VectorFiles.generated()
        let keyring = try PostbackKeyring(testKeys: [("apple", generated.keySPKI)])
        let vector = try #require(generated.vectors.first { $0.signature == "test_key" })
        let proto = try #require(AttributionProtocol.allCases.first { $0.name == vector.protocol })
        // Even named "apple", a test key's signature is labelled test_key.
        #expect(keyring.check(try read(proto, vector.body)).outcome == .testKey)
    }

    @Test func developmentPostbacksCountOnlyInDevelopmentMode() throws {
        let vector = try #require(try VectorFiles.appleAdAttributionKit().first { $0.name == "apple_doc_developer_settings" })
        let postback = try read(.adattributionkit, vector.body)
        let check = try PostbackKeyring().check(postback)
        let production = PostbackVerdict.judge(postback, signature: check, developmentMode: false, conflictsWithEarlier: false)
        #expect(production.verdict == .quarantined && production.reasons == ["development_postback"])
        let development = PostbackVerdict.judge(postback, signature: check, developmentMode: true, conflictsWithEarlier: false)
        #expect(development.verdict == .accepted && development.reasons.isEmpty)
    }

    @Test func theOrderKeysAreTriedInNeverChangesTheOutcome() throws {
        // The keyring tries the key that verified the last postback first; mixing Apple's and a
        // test key's postbacks must still label each one by its own signer.
        let generated = try VectorFiles.generated()
        let keyring = try PostbackKeyring(testKeys: [(generated.keyName, generated.keySPKI)])
        let apple = try VectorFiles.appleSKAdNetwork().filter(\.valid)
        let test = generated.vectors.filter { $0.protocol == "skadnetwork" && $0.signature == "test_key" }
        for i in 0..<max(apple.count, test.count) * 2 {
            if i % 3 == 0 {
                #expect(keyring.check(try read(.skadnetwork, apple[i % apple.count].body)).outcome == .apple)
            } else {
                #expect(keyring.check(try read(.skadnetwork, test[i % test.count].body)).outcome == .testKey)
            }
        }
    }

    @Test func applesKeysCannotBeTestKeys() {
        #expect(throws: (any Error).self) { try PostbackKeyring(testKeys: [("mine", SKAdNetworkKeys.appleP256)]) }
        #expect(throws: (any Error).self) {
            try PostbackKeyring(testKeys: [("dev", AdAttributionKitKeys.all[2].subjectPublicKeyInfo)])
        }
    }

    @Test func aKeyOnAnotherCurveIsRefused() {
        // Apple's P-192 key: no library here checks it, so it cannot be trusted as a test key.
        #expect(throws: (any Error).self) { try PostbackKeyring(testKeys: [("old", "MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG")]) }
        #expect(throws: (any Error).self) { try PostbackKeyring(testKeys: [("junk", "not base64!")]) }
    }
}
