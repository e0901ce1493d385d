import AppleAds
import AppleAdsStandIn
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog
import Testing
@testable import Endpoint

/// The outbox on its own, over a real log and a stand-in for Apple: a token is on disk before it
/// is called for, Apple is asked once for it, a start finds its answer in the log and never asks
/// again, and what waits is bounded.
@Suite struct AppleAdsOutboxTests {
    static let attributed = #"{"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136,"clickDate":"2026-11-20T09:12Z","deviceModel":"iPhone"}"#

    func outbox(_ store: RecordLog, _ standIn: AppleAdsStandIn, maxPending: Int = 100) -> AppleAdsOutbox {
        AppleAdsOutbox(store: store, client: AppleAdsClient(url: URL(string: standIn.url)!, timeout: 5, connections: 2),
                       clock: EndpointClock(manual: false), maxPending: maxPending, turns: TurnRequester())
    }

    /// Takes `token` and waits until it is on disk: its entry.
    func takeStored(_ outbox: AppleAdsOutbox, _ token: String) throws -> AppleAdsOutbox.Entry {
        let stored = Locked<AppleAdsOutbox.Entry?>(nil)
        let done = DispatchSemaphore(value: 0)
        let taken = outbox.take(token: token, site: "app.example") { result in
            if case .success(let entry) = result { stored.withLock { $0 = entry } }
            done.signal()
        }
        guard case .queued = taken else { throw TakeFailed(taken: "\(taken)") }
        #expect(done.wait(timeout: .now() + 30) == .success)
        return try #require(stored.withLock { $0 })
    }

    struct TakeFailed: Error { var taken: String }

    @Test func aTokenIsAskedForOnceAndAStartFindsItsAnswerInTheLog() throws {
        let directory = temporaryDirectory()
        let standIn = try AppleAdsStandIn(scripts: ["token-once": [.answer(200, Self.attributed)]])
        defer { standIn.stop() }
        let publicID: String
        do {
            let store = try RecordLog(directory: directory)
            let outbox = outbox(store, standIn)
            let entry = try takeStored(outbox, "token-once")
            publicID = entry.publicID
            #expect(entry.status == .pending)
            outbox.start()
            #expect(outbox.waitUntilSettled(timeout: 30))
            let answered = try #require(try outbox.entry(publicID: publicID))
            #expect(answered.status == .attributed)
            #expect(answered.record?.campaignID == 542370539)
            #expect(outbox.prometheusText(now: EndpointClock(manual: false).now()).contains(#"attribution_apple_ads_calls_total{outcome="attributed"} 1"#))
            outbox.stop()
            store.close()
        }
        #expect(standIn.calls(for: "token-once") == 1)
        // A start: the answer is read back from the log, and Apple is not asked again.
        let store = try RecordLog(directory: directory)
        defer { store.close() }
        let outbox = outbox(store, standIn)
        outbox.start()
        defer { outbox.stop() }
        #expect(outbox.waitUntilSettled(timeout: 30))
        let answered = try #require(try outbox.entry(publicID: publicID))
        #expect(answered.status == .attributed)
        #expect(answered.record?.campaignID == 542370539)
        #expect(standIn.calls(for: "token-once") == 1)
        // The same token posted again is the one already answered.
        guard case .known(let again) = outbox.take(token: "token-once", site: "app.example", completion: { _ in }) else {
            Issue.record("the answered token was taken as new")
            return
        }
        #expect(again.publicID == publicID)
    }

    @Test func aTokenWaitingAtARestartIsCalledForAfterIt() throws {
        let directory = temporaryDirectory()
        let standIn = try AppleAdsStandIn(scripts: ["token-waiting": [.answer(200, #"{"attribution":false}"#)]])
        defer { standIn.stop() }
        let publicID: String
        do {
            let store = try RecordLog(directory: directory)
            // Never started: the token is on disk and nobody has asked Apple.
            publicID = try takeStored(outbox(store, standIn), "token-waiting").publicID
            store.close()
        }
        #expect(standIn.calls(for: "token-waiting") == 0)
        let store = try RecordLog(directory: directory)
        defer { store.close() }
        let outbox = outbox(store, standIn)
        #expect(try outbox.entry(publicID: publicID)?.status == .pending)
        outbox.start()
        defer { outbox.stop() }
        #expect(outbox.waitUntilSettled(timeout: 30))
        #expect(try outbox.entry(publicID: publicID)?.status == .notAttributed)
        #expect(standIn.calls(for: "token-waiting") == 1)
    }

    @Test func pastMaxPendingANewTokenIsRefusedAndCounted() throws {
        let standIn = try AppleAdsStandIn()
        defer { standIn.stop() }
        let store = try RecordLog(directory: temporaryDirectory())
        defer { store.close() }
        let outbox = outbox(store, standIn, maxPending: 3)
        for i in 0..<3 { _ = try takeStored(outbox, "token-\(i)") }
        for i in 3..<10 {
            guard case .backlogged = outbox.take(token: "token-\(i)", site: "app.example", completion: { _ in }) else {
                Issue.record("token \(i) was taken past the bound")
                continue
            }
        }
        // A token already waiting is still known, whatever the bound.
        guard case .known = outbox.take(token: "token-1", site: "app.example", completion: { _ in }) else {
            Issue.record("a waiting token posted again was refused")
            return
        }
        let metrics = outbox.prometheusText(now: EndpointClock(manual: false).now())
        #expect(metrics.contains("attribution_apple_ads_pending 3\n"))
        #expect(metrics.contains("attribution_apple_ads_backlogged_total 7\n"))
        #expect(standIn.calls(for: "token-5") == 0)
    }
}
