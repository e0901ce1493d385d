import Dispatch
import DurableFiles
import Foundation
import Primitives
import RawHTTPClient
@testable import RecordLog
import Testing
@testable import Demo
@testable import Endpoint

/// A digest the start cannot trust is read again in the background: the endpoint listens at once
/// and takes reports (browsers never send one again), while the postback paths, the Apps summary
/// and the postback export answer 503 until the postback ledger is whole.
@Suite(.serialized) struct PostbackRebuildTests {
    static let report = #"{"source_engagement_type":"click","source_site":"news.example","source_id":9,"attributed_on_site":"shop.example","trigger_data":3,"version":3}"#

    static func start(_ directory: String, at time: String, holding gate: DispatchSemaphore? = nil) throws -> LiveEndpoint {
        try LiveEndpoint(sites: ["app.example", "news.example"], directory: directory, startingAt: time,
                         configure: { $0.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)] },
                         beforeBackgroundRebuild: { gate?.wait() })
    }

    static func postback(_ endpoint: LiveEndpoint, _ n: Int) throws -> RawResponse {
        try httpRequest(port: endpoint.port, method: "POST", path: PostbackWindowTests.path, host: "app.example",
                        body: PostbackWindowTests.postback(n))
    }

    @Test func aDamagedDigestIsReadAgainWhileReportsAreAccepted() throws {
        let directory = temporaryDirectory()
        var endpoint = try Self.start(directory, at: "2026-11-01T10:00:00Z")
        for n in 1...30 { #expect(try Self.postback(endpoint, n).status == 200) }
        for n in [4, 4, 19] { #expect(json(try Self.postback(endpoint, n))["retry"] as? Bool == true) }
        // Two later days seal the days before, so that two sealed segments have digests.
        endpoint.clock.set("2026-11-02T10:00:00Z")
        for n in 31...40 { #expect(try Self.postback(endpoint, n).status == 200) }
        endpoint.clock.set("2026-11-03T10:00:00Z")
        #expect(try Self.postback(endpoint, 41).status == 200)
        endpoint.server.digests.sweep()
        let sealed = endpoint.server.store.segments.filter(\.sealed)
        #expect(sealed.count >= 2 && endpoint.server.digests.count == sealed.count)
        let rows = try PostbackWindowTests.rows(endpoint)
        let summary = try PostbackWindowTests.appsSummary(endpoint)
        #expect(rows.count == 41 && summary.contains(#""duplicates_received":3"#))
        endpoint.stop()

        // The first segment's digest damaged: every sealed segment after it is read again.
        let path = directory + "/digests/\(sealed[0].base).digest"
        func damage() throws {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[bytes.count / 2] ^= 0x40
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        try damage()
        // With the token keys as old as the log, reports need every segment: one pass before
        // listening, and postbacks are taken from the first request.
        let onePass = try Self.start(directory, at: "2026-11-03T11:00:00Z")
        #expect(onePass.server.postbackRebuild.isReady)
        #expect(try PostbackWindowTests.rows(onePass) == rows)
        onePass.server.digests.waitUntilStartSwept()
        onePass.stop()
        try damage()
        // Token keys made a day before the restart, and the late cut-off's month past the first
        // days: what reports need lies in the active segment only. (With keys as old as the log,
        // the report path needs every segment anyway, and the start reads them in one pass.)
        let keys = DurableJSONFile(path: directory + "/" + TokenKeyStore.fileName, empty: TokenKeyStore.File(), mode: 0o600)
        var file = try keys.load()
        let made = Timestamp(rfc3339: "2026-12-09T11:00:00Z")!
        for i in file.keys.indices { (file.keys[i].createdAt, file.keys[i].servesFrom) = (made, made) }
        try keys.save(file)
        let gate = DispatchSemaphore(value: 0)
        endpoint = try Self.start(directory, at: "2026-12-10T11:00:00Z", holding: gate)
        defer { endpoint.stop() }
        // Runs first: a failed expectation that throws must not leave a rebuild held at stop.
        // Two threads wait at the gate: the postback ledger's and the Apple Ads outbox's.
        defer { gate.signal(); gate.signal() }
        #expect(endpoint.server.startedFromDigests == 0)

        // Listening, with the ledger still to read: a report is stored and acknowledged.
        let accepted = try endpoint.post(Self.report)
        #expect(accepted.status == 201, "\(accepted.bodyText)")
        #expect(json(accepted)["verdict"] as? String == "accepted")
        // A device's repeat waits: nothing stored, a 503 it will send again after.
        let waiting = try Self.postback(endpoint, 4)
        #expect(waiting.status == 503 && waiting.header("Retry-After") != nil)
        #expect(json(waiting)["rule"] as? String == "postbacks_rebuilding")
        // A flood meanwhile: new postbacks, repeats, bodies that are no postback, an empty one
        // and one past the postbacks' size limit. Every one is a 503 the device can send again;
        // none is stored, none traps. (A body past what the HTTP layer takes is its 413, as ever.)
        var flood = (0..<120).map { PostbackWindowTests.postback(100 + $0) } + Array(repeating: PostbackWindowTests.postback(4), count: 40)
        flood += [[], Array("{".utf8), Array("{\"jws-string\":\"\u{0}\"}".utf8), [UInt8](repeating: 0xFF, count: 60_000)]
        for body in flood {
            let answer = try httpRequest(port: endpoint.port, method: "POST", path: PostbackWindowTests.path, host: "app.example", body: body)
            #expect(answer.status == 503 && answer.header("Retry-After") != nil, "\(answer.status) \(answer.bodyText.prefix(120))")
        }
        let tooLarge = try httpRequest(port: endpoint.port, method: "POST", path: PostbackWindowTests.path, host: "app.example",
                                       body: [UInt8](repeating: 0xFF, count: 300_000))
        #expect(tooLarge.status == 413)
        for path in ["/api/apps/summary", "/api/postbacks", "/api/postbacks.csv"] {
            let answer = try endpoint.get(path)
            #expect(answer.status == 503 && json(answer)["rule"] as? String == "postbacks_rebuilding", "\(path)")
        }
        let metrics = try endpoint.get("/metrics").bodyText
        #expect(metrics.contains("attribution_postback_rebuild_pending 1\n") && metrics.contains("attribution_apple_ads_rebuild_pending 1\n"))
        // The Apple Ads outbox, whose digests stop at the damaged one too, reads the log on its own
        // thread: a token waits (apps post it again), and so do its view and export.
        let token = try httpRequest(port: endpoint.port, method: "POST", path: AppleAdsRoutes.path, host: "app.example",
                                    headers: [("Content-Type", "text/plain")], body: Array("a-token-while-rebuilding".utf8))
        #expect(token.status == 503 && json(token)["rule"] as? String == "apple_ads_rebuilding")
        for path in ["/api/apple-ads/summary", "/api/apple-ads"] {
            #expect(json(try endpoint.get(path))["rule"] as? String == "apple_ads_rebuilding", "\(path)")
        }
        // The summary of reports is not the ledger's: it answers (or says it is rebuilding itself).
        #expect(try endpoint.get("/api/summary").status != 500)

        gate.signal()
        gate.signal()
        endpoint.server.waitUntilPostbacksReady()
        endpoint.server.waitUntilAppleAdsReady()
        #expect(try endpoint.get("/api/apple-ads/summary").status == 200)
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_postback_rebuild_pending 0\n"))
        // The same postbacks, retries and counts as before the restart; the repeat is a retry.
        #expect(try PostbackWindowTests.rows(endpoint) == rows)
        #expect(try PostbackWindowTests.appsSummary(endpoint) == summary)
        let again = json(try Self.postback(endpoint, 4))
        #expect(again["retry"] as? Bool == true)
        #expect(try PostbackWindowTests.rows(endpoint).count == 41)
        // The threads held back until the ledger was whole wrote the damaged digest again.
        endpoint.server.digests.waitUntilStartSwept()
        #expect(SegmentDigest.decode(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))?.describes(sealed[0]) == true)
    }

    /// Where the report path's triggers and tokens must be read from: the first segment that
    /// ends within a day of the oldest time they need.
    @Test func theReportPathReadsOnlySegmentsRecentEnoughToHoldWhatItNeeds() {
        func at(_ day: Int) -> Timestamp { Timestamp(millisecondsSinceEpoch: Int64(day) * 86_400_000) }
        let segments = [
            RecordLog.Segment(base: 0, end: 100, bytes: 100, records: 5, firstTime: at(1), lastTime: at(3), sealed: true),
            RecordLog.Segment(base: 100, end: 200, bytes: 100, records: 0, firstTime: nil, lastTime: nil, sealed: true),
            RecordLog.Segment(base: 200, end: 300, bytes: 100, records: 5, firstTime: at(3), lastTime: at(9), sealed: true),
            RecordLog.Segment(base: 300, end: 400, bytes: 100, records: 5, firstTime: at(9), lastTime: at(20), sealed: true),
            RecordLog.Segment(base: 400, end: 450, bytes: 50, records: 1, firstTime: at(20), lastTime: at(21), sealed: false),
        ]
        #expect(RecoveredState.reportStateFrom(segments, triggersFrom: at(12), tokensFrom: at(15)) == 300)
        // A day's slack for a clock stepped back.
        #expect(RecoveredState.reportStateFrom(segments, triggersFrom: at(12), tokensFrom: at(10)) == 200)
        #expect(RecoveredState.reportStateFrom(segments, triggersFrom: at(4), tokensFrom: at(30)) == 0)
        // Keys of unknown age: the whole log.
        #expect(RecoveredState.reportStateFrom(segments, triggersFrom: at(30), tokensFrom: nil) == 0)
        // Nothing needed before now: the active segment only.
        #expect(RecoveredState.reportStateFrom(segments, triggersFrom: at(30), tokensFrom: at(30)) == 400)
        #expect(RecoveredState.reportStateFrom([], triggersFrom: at(30), tokensFrom: at(30)) == 0)
    }
}
