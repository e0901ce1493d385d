import Postbacks
import Primitives
import RecordLog
import Testing
import Foundation

/// Telling a device's retry from a new postback, and keeping postbacks in the log.
@Suite struct PostbackLedgerTests {
    let here = PostbackOrigin(day: 20_418, site: "app.example")
    let there = PostbackOrigin(day: 20_419, site: "other.example")

    @Test func retriesConflictsAndReleases() {
        let ledger = PostbackLedger()
        #expect(ledger.classify(duplicateKey: "k", contentHash: 1, verified: true) == .new)
        ledger.record(duplicateKey: "k", contentHash: 1, id: 7, verified: true, origin: here)
        #expect(ledger.classify(duplicateKey: "k", contentHash: 1, verified: true) == .retry(of: 7, origin: here))
        #expect(ledger.retry(duplicateKey: "k", contentHash: 1).map { [$0.id: $0.origin] } == [7: here])
        #expect(ledger.classify(duplicateKey: "k", contentHash: 2, verified: true) == .conflict)
        ledger.record(duplicateKey: "k", contentHash: 2, id: 8, verified: true, origin: there)
        #expect(ledger.classify(duplicateKey: "k", contentHash: 2, verified: true) == .retry(of: 8, origin: there))
        // A write that failed was never stored: the next delivery is new again.
        ledger.release(duplicateKey: "k", contentHash: 2)
        #expect(ledger.classify(duplicateKey: "k", contentHash: 2, verified: true) == .conflict)
        ledger.release(duplicateKey: "k", contentHash: 1)
        #expect(ledger.classify(duplicateKey: "k", contentHash: 1, verified: true) == .new)
        #expect(ledger.retry(duplicateKey: "k", contentHash: 1) == nil)
    }

    @Test func onlyAVerifiedDeliveryClaimsItsKey() {
        let ledger = PostbackLedger()
        // A forgery under the genuine postback's identifier arrives first, and is stored.
        #expect(ledger.classify(duplicateKey: "k", contentHash: 66, verified: false) == .new)
        ledger.record(duplicateKey: "k", contentHash: 66, id: 1, verified: false, origin: here)
        // The genuine, verified postback is not its conflict...
        #expect(ledger.classify(duplicateKey: "k", contentHash: 10, verified: true) == .new)
        ledger.record(duplicateKey: "k", contentHash: 10, id: 2, verified: true, origin: here)
        // ...its device's retries are its own...
        #expect(ledger.classify(duplicateKey: "k", contentHash: 10, verified: true) == .retry(of: 2, origin: here))
        // ...a second verified postback with other content under the key still is a conflict...
        #expect(ledger.classify(duplicateKey: "k", contentHash: 11, verified: true) == .conflict)
        // ...and so is a further unverified one.
        #expect(ledger.classify(duplicateKey: "k", contentHash: 67, verified: false) == .conflict)
        // Two unverified deliveries (SKAdNetwork 2.0 cannot be checked) still conflict.
        ledger.record(duplicateKey: "u", contentHash: 1, id: 3, verified: false, origin: here)
        #expect(ledger.classify(duplicateKey: "u", contentHash: 2, verified: false) == .conflict)
    }

    @Test func aFloodOfContentsUnderOneKeyIsNotRemembered() {
        let ledger = PostbackLedger()
        for n in 0..<1_000 {
            ledger.record(duplicateKey: "forged", contentHash: UInt64(n), id: UInt64(n), verified: false, origin: here)
        }
        // Sixteen are remembered; the rest are still conflicts (stored and quarantined), and a
        // copy of one of them is stored again rather than counted: only forgeries get here.
        #expect(ledger.keysInMemory == PostbackLedger.deliveriesPerKey)
        #expect(ledger.classify(duplicateKey: "forged", contentHash: 3, verified: false) == .retry(of: 3, origin: here))
        #expect(ledger.classify(duplicateKey: "forged", contentHash: 999, verified: false) == .conflict)
        ledger.record(duplicateKey: "genuine", contentHash: 1, id: 5_000, verified: true, origin: there)
        #expect(ledger.classify(duplicateKey: "genuine", contentHash: 1, verified: true) == .retry(of: 5_000, origin: there))
    }

    @Test func aReleaseBeforeItsRecordIsNotLost() {
        // A commit on another thread can fail the postback before its intake notes it.
        let ledger = PostbackLedger()
        ledger.release(duplicateKey: "k", contentHash: 1)
        ledger.record(duplicateKey: "k", contentHash: 1, id: 3, verified: true, origin: here)
        #expect(ledger.classify(duplicateKey: "k", contentHash: 1, verified: true) == .new)
    }

    @Test func theSameContentIsTheSameWhateverTheKeyOrderOrSpacing() {
        let a = PostbackContent.fingerprint(Array(#"{"a":1,"b":[true,"x"]}"#.utf8))
        #expect(a == PostbackContent.fingerprint(Array(#"{ "b" : [true, "x"], "a" : 1 }"#.utf8)))
        #expect(a != PostbackContent.fingerprint(Array(#"{"a":2,"b":[true,"x"]}"#.utf8)))
        #expect(a != PostbackContent.fingerprint(Array(#"{"a":1,"b":["x",true]}"#.utf8)))
    }

    @Test func storedPostbacksAndRetriesSurviveAReopen() throws {
        let directory = NSTemporaryDirectory() + "postback-ledger-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let draft = StoredPostback.Draft(protocol: .adattributionkit, site: "app.example", verdict: .quarantined,
                                         reasons: ["signature_invalid", "conflicting_duplicate"], signature: .invalid,
                                         keyName: "demo", duplicateKey: "adattributionkit\u{1F}P-1", contentHash: 99,
                                         body: Array(#"{"jws-string":"x"}"#.utf8))
        var id: UInt64?
        do {
            let store = try RecordLog(directory: directory, committer: .owner)
            id = store.append(draft, steps: { _ in })
            store.appendRetry(of: id!, protocol: .adattributionkit, steps: { _ in })
            store.appendRetry(of: id!, protocol: .adattributionkit, steps: { _ in })
            store.commitQueued()
            store.close()
        }
        let ledger = PostbackLedger()
        let store = try RecordLog(directory: directory, committer: .owner, replaying: { ledger.take($0) })
        defer { store.close() }
        let stored = try #require(store.postbacks().next())
        #expect(stored.id == id && stored.draft == draft && stored.protocol == .adattributionkit)
        #expect(ledger.retries(of: stored.id) == 2)
        #expect(ledger.classify(duplicateKey: draft.duplicateKey, contentHash: 99, verified: true) == .retry(of: stored.id, origin: PostbackOrigin(receivedAt: stored.receivedAt, site: "app.example")))
        // Replay knows the stored delivery was a forgery: a verified one under its key is new.
        #expect(ledger.classify(duplicateKey: draft.duplicateKey, contentHash: 100, verified: true) == .new)
        // Every kind is counted, each apart.
        #expect(store.count(of: .postback) == 1)
        #expect(store.count(of: .postbackRetry) == 2)
    }
}

@Suite struct Base64Tests {
    @Test func bothAlphabetsAndTheirPadding() {
        #expect(Base64.decode("TWFu", urlSafe: false) == Array("Man".utf8))
        #expect(Base64.decode("TWE=", urlSafe: false) == Array("Ma".utf8))
        #expect(Base64.decode("TWE", urlSafe: false) == Array("Ma".utf8))
        #expect(Base64.decode("TQ==", urlSafe: false) == Array("M".utf8))
        #expect(Base64.decode("TQ=", urlSafe: false) == nil)
        #expect(Base64.decode("T", urlSafe: false) == nil)
        #expect(Base64.decode("TR==", urlSafe: false) == nil)  // leftover bits set
        #expect(Base64.decode("+/8=", urlSafe: false) == [0xfb, 0xff])
        #expect(Base64.decode("-_8", urlSafe: true) == [0xfb, 0xff])
        #expect(Base64.decode("-_8", urlSafe: false) == nil)
        #expect(Base64.decode("+/8", urlSafe: true) == nil)
        #expect(Base64.decode("", urlSafe: true) == [])
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.decode(Data(bytes).base64EncodedString(), urlSafe: false) == bytes)
        }
    }
}
