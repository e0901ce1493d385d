import Foundation
import PCM
import Primitives
import Signatures
import Testing
@testable import Endpoint

/// Anyone may ask `sign-unlinkable-token/` for signatures and report each one: the verified-token
/// sets that catch replays must stay bounded, and must still never miss a replay.
@Suite struct TokenSetBoundTests {
    static let signer = TestTokenKeys.key("news.example")

    /// A token the site's key signed, as a browser would hold it after the blind signature.
    static func signedToken() throws -> (token: String, signature: String) {
        let token = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let blinding = try signer.publicKey.blind(token: token)
        let blindSignature = try #require(signer.blindSignature(for: blinding.blindedMessage))
        let signature = try #require(blinding.finalize(blindSignature: blindSignature))
        return (Base64URL.encode(token), Base64URL.encode(signature))
    }

    static func report(_ token: (token: String, signature: String)) throws -> PCMReport {
        let body = reportBody(extra: ReportTokenTests.pair("source", token: token.token, signature: token.signature))
        return try PCMReportValidator(siteRules: SiteRules(developmentMode: true)).validate(body: Array(body.utf8)).get()
    }

    static func checks(exactBound: Int, filterBits: Int) throws -> TokenChecks {
        let book = try TokenKeyStore(path: temporaryDirectory() + "/token-keys.json", makesKeys: false, servedSites: [],
                                     foreignKeys: ["news.example": signer.publicKey], clock: { Timestamp(millisecondsSinceEpoch: 1_795_000_000_000) })
        return TokenChecks(keys: book, requireTokens: false, clock: { Timestamp(millisecondsSinceEpoch: 1_795_000_000_000) },
                           emptySet: RememberedTokens(exactBound: exactBound, filterBits: filterBits))
    }

    @Test func pastItsExactBoundAKeysSetStopsGrowingAndStillCatchesEveryReplay() throws {
        let checks = try Self.checks(exactBound: 8, filterBits: 4_096)
        let reports = try (0..<40).map { _ in try Self.report(Self.signedToken()) }
        for report in reports {
            #expect(checks.check(report, role: .source).reasons == ["source_token_verified"])
        }
        let memory = checks.memory
        #expect(memory.tokens == 40 && memory.approximate == 32 && memory.filters == 1)
        // Every one of them again: the first eight are known exactly, the rest possibly, and all
        // are quarantined.
        let again = reports.map { checks.check($0, role: .source) }
        #expect(again.allSatisfy { $0.quarantine })
        #expect(again.prefix(8).allSatisfy { $0.reasons == ["source_token_replayed"] })
        #expect(again.dropFirst(8).allSatisfy { $0.reasons == ["source_token_possibly_replayed"] })
        // The other role is another copy of the same click, not a replay.
        #expect(checks.check(reports[20], role: .destination).reasons == ["source_token_verified"])
    }

    @Test func aFloodOfSignedTokensHoldsItsMemoryAndQuarantinesRatherThanMisses() throws {
        var set = RememberedTokens(exactBound: 1_000, filterBits: 1 << 14)
        var inserted: [UInt64] = []
        var source = SplitMix64(state: 7)
        var quarantined = 0
        for _ in 0..<20_000 {
            let f = source.next()
            if set.insert(f) == .absent { inserted.append(f) } else { quarantined += 1 }
        }
        #expect(set.exact.count == 1_000 && set.filterBytes == 2_048)
        // Nothing remembered is ever missed.
        #expect(inserted.allSatisfy { set.lookup($0) != .absent })
        // Once full, fresh tokens are quarantined (kept, flagged), not taken as new.
        #expect(quarantined > 10_000)
        #expect(set.filter!.falsePositiveRate > 0.5)
    }

    @Test func aRestartRebuildsTheSameAnswersFromWhatWasStored() throws {
        let before = try Self.checks(exactBound: 4, filterBits: 4_096)
        let reports = try (0..<12).map { _ in try Self.report(Self.signedToken()) }
        let stored = reports.flatMap { before.check($0, role: .source).remembered }
        #expect(stored.count == 12)
        // What a start takes from the segments' digests.
        let after = try Self.checks(exactBound: 4, filterBits: 4_096)
        after.remember(stored)
        #expect(reports.allSatisfy { after.check($0, role: .source).quarantine })
        #expect(after.memory.filters == 1)
    }

    @Test func aReportNotStoredIsForgottenWhenItsSetIsExact() throws {
        let checks = try Self.checks(exactBound: 4, filterBits: 4_096)
        let report = try Self.report(Self.signedToken())
        let outcome = checks.check(report, role: .source)
        checks.forget(outcome)
        #expect(checks.check(report, role: .source).reasons == ["source_token_verified"])
    }
}

/// Uniform 64-bit values, the same every run.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
