import AppleAds
import AppleAdsRecords
import Foundation
import Locking
import Primitives
import RecordLog
import Testing
@testable import Endpoint

/// The outbox knows a token posted again by its bytes, not its hash: with every token given the
/// same hash, two different tokens stay two (each its own id, each sent to Apple), and the same
/// token is still one, whether waiting to be written, waiting for Apple, or answered.
@Suite struct AppleAdsTokenIdentityTests {
    static func outbox(_ store: RecordLog) -> AppleAdsOutbox {
        AppleAdsOutbox(store: store, client: AppleAdsClient(url: URL(string: "http://127.0.0.1:9/")!, timeout: 1, connections: 1),
                       clock: EndpointClock(manual: false), maxPending: 100, turns: TurnRequester(), tokenHash: { _ in 42 })
    }

    /// Takes `token`: the entry it was given (at once or once written by `store.commitQueued`).
    static func take(_ outbox: AppleAdsOutbox, _ token: String, _ results: Locked<[String: AppleAdsOutbox.Entry]>,
                     as name: String) -> AppleAdsOutbox.Taken {
        let taken = outbox.take(token: token, site: "app.example") { result in
            if case .success(let entry) = result { results.withLock { $0[name] = entry } }
        }
        if case .known(let entry) = taken { results.withLock { $0[name] = entry } }
        return taken
    }

    @Test func twoTokensWithOneHashAreTwoAndOneTokenTwiceIsOne() throws {
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        defer { store.close() }
        let outbox = Self.outbox(store)
        let results = Locked<[String: AppleAdsOutbox.Entry]>([:])
        let a = "token-a-" + String(repeating: "A", count: 100), b = "token-b-" + String(repeating: "B", count: 100)
        // In one turn, before anything is written: a, a again, b.
        _ = Self.take(outbox, a, results, as: "a")
        _ = Self.take(outbox, a, results, as: "a again")
        _ = Self.take(outbox, b, results, as: "b")
        store.commitQueued()
        var got = results.withLock { $0 }
        #expect(got["a"]?.tokenID == got["a again"]?.tokenID && got["a"] != nil)
        #expect(got["b"] != nil && got["b"]?.tokenID != got["a"]?.tokenID && got["b"]?.publicID != got["a"]?.publicID)
        // Waiting for Apple: a is known, b is not taken for a.
        guard case .known(let known) = Self.take(outbox, a, results, as: "a later") else {
            Issue.record("the same token was not known")
            return
        }
        #expect(known.tokenID == got["a"]?.tokenID)
        _ = Self.take(outbox, "token-c", results, as: "c")
        store.commitQueued()
        got = results.withLock { $0 }
        #expect(got["c"] != nil && ![got["a"]?.tokenID, got["b"]?.tokenID].contains(got["c"]?.tokenID))
    }

    @Test func anAnsweredTokenIsComparedWithItsRecord() throws {
        let directory = temporaryDirectory()
        let a = "answered-token-" + String(repeating: "Z", count: 80)
        var tokenA: AppleAdsOutbox.Entry?
        do {
            let store = try RecordLog(directory: directory, committer: .owner)
            let outbox = Self.outbox(store)
            let results = Locked<[String: AppleAdsOutbox.Entry]>([:])
            _ = Self.take(outbox, a, results, as: "a")
            store.commitQueued()
            tokenA = results.withLock { $0["a"] }
            let entry = try #require(tokenA)
            // Apple's final answer, as the outbox writes it: the token's summary, not its text.
            store.appendAppleAdsCall(StoredAppleAdsCall(tokenID: entry.tokenID, at: entry.receivedAt, httpStatus: 200, status: .notAttributed,
                                                        nextAttempt: nil, record: AppleAdsRecord(attribution: false),
                                                        token: .init(publicID: hexBytes(entry.publicID), site: "app.example",
                                                                     receivedAt: entry.receivedAt, calls: 1, lastHTTPStatus: 200)),
                                     completion: { _ in })
            store.commitQueued()
            store.close()
        }
        // A start reads it back: the token is answered, its text is only in the log.
        let store = try RecordLog(directory: directory, committer: .owner)
        defer { store.close() }
        let outbox = Self.outbox(store)
        let results = Locked<[String: AppleAdsOutbox.Entry]>([:])
        guard case .known(let again) = Self.take(outbox, a, results, as: "a again") else {
            Issue.record("the answered token posted again was not known")
            return
        }
        #expect(again.tokenID == tokenA?.tokenID && again.status == .notAttributed)
        // Another token with the same hash is a new token, not the answered one.
        let other = Self.take(outbox, "another-token", results, as: "other")
        guard case .queued = other else {
            Issue.record("a token with the answered one's hash was taken for it: \(other)")
            return
        }
        store.commitQueued()
        #expect(results.withLock { $0["other"] }.map { $0.tokenID != tokenA?.tokenID } == true)
    }
}

/// The 16 bytes a public id's 32 hex digits spell.
private func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16) ?? 0 }
}
