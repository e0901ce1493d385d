import AppleAdsStandIn
import Foundation
@testable import RecordLog
@testable import AppleAdsRecords
import Primitives
import Testing
@testable import Endpoint

/// The Apple Ads outbox holds the tokens of about a day: a final token leaves memory a day after
/// its answer, and the summary and the export say the same before and after, and after a restart.
@Suite(.serialized) struct AppleAdsWindowTests {
    let helpers = AppleAdsTests()
    let start = "2026-11-20T10:00:00Z"

    func inMemory(_ endpoint: LiveEndpoint) throws -> String? {
        try endpoint.get("/metrics").bodyText.split(separator: "\n")
            .first { $0.hasPrefix("attribution_apple_ads_tokens_in_memory ") }.map(String.init)
    }

    /// What a marketer reads of the final tokens: the view's numbers and every row of the export,
    /// in both formats. The waiting token's calls go on meanwhile, so its row and the calls are left out.
    func numbers(_ endpoint: LiveEndpoint, waiting: String) throws -> [String] {
        var summary = json(try endpoint.get("/api/apple-ads/summary?from=2026-11-01&to=2026-11-30"))
        summary["records_kept_from"] = nil
        summary["calls"] = nil
        let lines = { (text: String) in text.split(separator: "\n").filter { !$0.contains(waiting) }.joined(separator: "\n") }
        return [String(decoding: try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys]), as: UTF8.self),
                lines(try endpoint.get("/api/apple-ads").bodyText), lines(try endpoint.get("/api/apple-ads.csv").bodyText),
                try endpoint.get("/api/apple-ads?since=2026-11-20T10:00:00Z&until=2026-11-20T10:00:00.002Z").bodyText]
    }

    @Test func aFinalTokenLeavesMemoryADayAfterItsAnswerAndTheNumbersStay() throws {
        let standIn = try AppleAdsStandIn(scripts: ["t-yes": [.answer(200, AppleAdsTests.attributed)],
                                                    "t-no": [.answer(200, #"{"attribution":false}"#)],
                                                    "t-bad": [.answer(400, "")],
                                                    // Apple unavailable for this one: it waits, calls paused, until its 24 hours end.
                                                    "t-later": [.answer(503, "")]])
        defer { standIn.stop() }
        let directory = temporaryDirectory()
        var endpoint = try helpers.endpoint(standIn, directory: directory)
        endpoint.clock.set(start)
        var ids: [String: String] = [:]
        for (n, token) in ["t-yes", "t-no", "t-bad"].enumerated() {
            endpoint.clock.set(Timestamp(millisecondsSinceEpoch: Timestamp(rfc3339: start)!.millisecondsSinceEpoch + Int64(n)).rfc3339)
            ids[token] = try #require(json(try helpers.post(endpoint, token))["id"] as? String)
        }
        helpers.at(endpoint, start, plus: 1)
        // One more, posted an hour later, which Apple does not answer: it waits.
        helpers.at(endpoint, start, plus: 3600)
        let waiting = try #require(json(try helpers.post(endpoint, "t-later"))["id"] as? String)
        helpers.at(endpoint, start, plus: 3600)
        #expect(helpers.status(endpoint, ids["t-yes"]!)["status"] as? String == "attributed")
        #expect(helpers.status(endpoint, waiting)["status"] as? String == "pending")
        let before = try numbers(endpoint, waiting: waiting)
        #expect(before[0].contains("\"attributed\":1") && before[0].contains("\"pending\":1") && before[0].contains("\"tokens\":4"))
        #expect(before[1].split(separator: "\n").count == 3)
        #expect(try endpoint.get("/api/apple-ads").bodyText.split(separator: "\n").last?.contains(waiting) == true, "the waiting token comes last")
        #expect(before[3].split(separator: "\n").count == 2, "the export's period is the tokens' arrival: \(before[3])")
        #expect(try inMemory(endpoint) == "attribution_apple_ads_tokens_in_memory 4")

        // Within the day an answered token's answer is read back from its record, not held: the
        // same after a restart, and the same token posted again gets the same id and answer.
        let answers = ["t-yes", "t-no", "t-bad"].map { endpoint.request("GET", "/apple-ads/attribution/" + ids[$0]!).bodyText }
        #expect(answers[0].contains("\"status\":\"attributed\"") && answers[0].contains("\"orgId\":"), "\(answers[0])")
        let again = try helpers.post(endpoint, "t-yes")
        #expect(again.status == 202 && again.bodyText == answers[0])
        endpoint.stop()
        let hourLater = Timestamp(millisecondsSinceEpoch: Timestamp(rfc3339: start)!.millisecondsSinceEpoch + 3600 * 1000).rfc3339
        endpoint = try helpers.endpoint(standIn, directory: directory, startingAt: hourLater)
        helpers.at(endpoint, start, plus: 3600)
        #expect(["t-yes", "t-no", "t-bad"].map { endpoint.request("GET", "/apple-ads/attribution/" + ids[$0]!).bodyText } == answers)
        #expect(try helpers.post(endpoint, "t-no").bodyText == answers[1])
        #expect(try inMemory(endpoint) == "attribution_apple_ads_tokens_in_memory 4")
        #expect(try numbers(endpoint, waiting: waiting) == before)

        // A day after their answers the three final tokens are let go (by id they are no more);
        // the waiting one stays, and every number with it.
        helpers.at(endpoint, start, plus: 24 * 3600 + 2)
        #expect(try inMemory(endpoint) == "attribution_apple_ads_tokens_in_memory 1")
        #expect(endpoint.request("GET", "/apple-ads/attribution/" + ids["t-yes"]!).status == 404)
        #expect(helpers.status(endpoint, waiting)["status"] as? String == "pending")
        #expect(try numbers(endpoint, waiting: waiting) == before)
        endpoint.stop()

        // A restart a day later reads the log: the final tokens go straight to the tally, only
        // the waiting one is held, and the numbers are the same.
        let dayLater = Timestamp(millisecondsSinceEpoch: Timestamp(rfc3339: start)!.millisecondsSinceEpoch + (24 * 3600 + 2) * 1000).rfc3339
        endpoint = try helpers.endpoint(standIn, directory: directory, startingAt: dayLater)
        #expect(try inMemory(endpoint) == "attribution_apple_ads_tokens_in_memory 1")
        helpers.at(endpoint, start, plus: 24 * 3600 + 2)
        #expect(try numbers(endpoint, waiting: waiting) == before)
        #expect(standIn.calls(for: "t-yes") == 1, "never called again")
        // The waiting token's 24 hours end: its last record seals the first day's segment.
        helpers.at(endpoint, start, plus: 26 * 3600)
        #expect(helpers.status(endpoint, waiting)["status"] as? String == "expired")
        endpoint.stop()

        // Days later the first day's segment is more than a day old: a start takes its tokens from
        // its digest, as counts, and the numbers are those of a start that read the log.
        try FileManager.default.removeItem(atPath: directory + "/digests")
        let daysLater = Timestamp(millisecondsSinceEpoch: Timestamp(rfc3339: start)!.millisecondsSinceEpoch + 3 * 86_400_000).rfc3339
        endpoint = try helpers.endpoint(standIn, directory: directory, startingAt: daysLater).waitingForTheStartSweep()
        #expect(endpoint.server.appleAds.segmentsFromDigests == 0)
        let fromLog = try numbers(endpoint, waiting: "(none)")
        #expect(fromLog[0].contains("\"attributed\":1") && fromLog[0].contains("\"expired\":1") && fromLog[0].contains("\"tokens\":4"))
        endpoint.stop()
        endpoint = try helpers.endpoint(standIn, directory: directory, startingAt: daysLater)
        defer { endpoint.stop() }
        #expect(endpoint.server.appleAds.segmentsFromDigests >= 1)
        #expect(try numbers(endpoint, waiting: "(none)") == fromLog)
        #expect(try inMemory(endpoint) == "attribution_apple_ads_tokens_in_memory 0")
    }

    /// The summary a final call carries comes after all an earlier version reads: the format byte
    /// stays 1, and the same bytes without the summary read as they always did.
    @Test func aFinalCallCarriesItsTokenAfterWhatEarlierVersionsRead() throws {
        let summary = StoredAppleAdsCall.TokenSummary(publicID: Array(1...16), site: "app.example",
                                                      receivedAt: Timestamp(rfc3339: "2026-11-20T10:00:00Z")!, calls: 3, lastHTTPStatus: 404)
        let final = StoredAppleAdsCall(tokenID: 7, at: Timestamp(rfc3339: "2026-11-20T10:00:15Z")!, httpStatus: 404, status: .notFound,
                                       nextAttempt: nil, record: nil, token: summary)
        var withSummary: [UInt8] = [], without: [UInt8] = []
        final.encode(into: &withSummary)
        var old = final
        old.token = nil
        old.encode(into: &without)
        #expect(withSummary[0] == 1 && Array(withSummary.prefix(without.count)) == without)
        func decode(_ payload: [UInt8]) -> StoredAppleAdsCall? {
            var envelope: [UInt8] = []
            envelope.appendLE(UInt64(9))
            envelope.appendLE(final.at.millisecondsSinceEpoch)
            return (envelope + payload).withUnsafeBytes { raw in
                RecordLog.RecordView(kind: RecordKind.appleAdsCall.number, tag: 4, payload: raw, end: 0).flatMap(StoredAppleAdsCall.decode)
            }
        }
        #expect(decode(withSummary)?.token == summary)
        #expect(decode(without)?.token == nil && decode(without)?.status == .notFound)
        // A summary cut short is damage, not a call without one.
        #expect(decode(Array(withSummary.dropLast())) == nil)
    }
}

/// Counts a start adds up from digests on disk: a crafted file may claim any number, and the sum
/// stops at the bounds instead of ending the process.
@Suite struct DigestSumTests {
    @Test func sumsPastTheBoundsStopThere() {
        let sums = [Int.max +| 1, Int.min +| -1, 2 +| 3, Int(UInt32.max +| UInt32(1))]
        #expect(sums == [Int.max, Int.min, 5, Int(UInt32.max)])
        var big = AppleAdsSummary()
        big.byStatus[.attributed] = .max - 1
        big.calls = .max
        big.installs[AppleAdsSummary.Key(campaign: 1, adGroup: nil, keyword: nil)] = .init(downloads: .max, redownloads: 1, preOrders: .max, other: 0)
        big.placements[.init(placement: .todayTab, claim: .impression)] = .max
        var total = AppleAdsSummary()
        total.merge(big)
        total.merge(big)
        #expect(total.byStatus[.attributed] == .max && total.calls == .max)
        #expect(total.installs.first?.value.downloads == .max && total.installs.first?.value.redownloads == 2)
        #expect(total.installs.first?.value.preOrders == .max && total.placements.first?.value == .max)
        var counts = ConversionTable.Counts(AppsSummary.ConversionCounts(installs: .max, redownloads: 0, reEngagements: 7))
        counts.add(counts)
        #expect(counts.installs == .max && counts.reEngagements == 14)
    }
}
