import Primitives
import RecordLog
import Testing
@testable import Endpoint

/// The start's decisions on their own, over segments and digests described by hand: when the
/// owners read as the log opens, when digests are trusted, when the Apple Ads outbox and the
/// postback ledger read in the background, and from where. `StartDigestTests` and
/// `PostbackRebuildTests` run the same decisions against real logs.
struct StartPlanTests {
    /// Three sealed segments of 100 bytes and the active one, a day apart.
    static let day: Int64 = 86_400_000
    static let segments: [RecordLog.Segment] = (0..<4).map { i in
        RecordLog.Segment(base: i * 100, end: i * 100 + 100, bytes: 100, records: 10,
                          firstTime: Timestamp(millisecondsSinceEpoch: Int64(i) * day),
                          lastTime: Timestamp(millisecondsSinceEpoch: Int64(i) * day + day - 1), sealed: i < 3)
    }

    /// A chain of the first `count` sealed segments' digests, each with `sections`.
    static func chain(_ count: Int, sections: Set<String> = ["triggers", AppleAdsOutbox.digestSection]) -> SegmentDigests.Restored {
        var chain = SegmentDigests.Restored()
        for segment in segments.prefix(count) {
            chain.digests.append(SegmentDigest(base: segment.base, end: segment.end, records: segment.records, sections: [:]))
            chain.sectionNames[segment.base] = sections
        }
        return chain
    }

    @Test func anEmptyDigestsFolderReadsTheLogAsItOpens() {
        #expect(StartPlan.readsWhileOpening(chain: Self.chain(0), digestsDirectoryNames: []))
        #expect(StartPlan.readsWhileOpening(chain: Self.chain(0), digestsDirectoryNames: ["notes.txt"]))
    }

    @Test func aDamagedFirstDigestStillTakesDigestsFirst() {
        // The chain is empty (the first did not decode), but a digest file is there: the owners
        // take the later segments' digests after reading the first segment from the log.
        #expect(!StartPlan.readsWhileOpening(chain: Self.chain(0), digestsDirectoryNames: ["0.digest", "100.digest"]))
        #expect(!StartPlan.readsWhileOpening(chain: Self.chain(2), digestsDirectoryNames: ["0.digest", "100.digest"]))
    }

    @Test func digestsOfAnotherLogAreNeverTrusted() {
        var other = Self.chain(2)
        other.digests[1].end += 1
        #expect(!StartPlan.trustsDigests(other, postbackTablesDescribe: true, segments: Self.segments))
        #expect(!StartPlan.trustsDigests(Self.chain(2), postbackTablesDescribe: false, segments: Self.segments))
        #expect(StartPlan.trustsDigests(Self.chain(2), postbackTablesDescribe: true, segments: Self.segments))
        // More digests than segments: a log cut back behind them.
        #expect(!StartPlan.trustsDigests(Self.chain(3), postbackTablesDescribe: true, segments: Array(Self.segments.prefix(2))))
    }

    @Test func theOutboxReadsInTheBackgroundOnlyWhenItsDigestsStopShortOfTheNewestSeal() {
        // Every sealed segment but the newest digested, with the outbox's section: it reads its last day now.
        #expect(!StartPlan.outboxReplaysInBackground(segments: Self.segments, chain: Self.chain(2)))
        #expect(!StartPlan.outboxReplaysInBackground(segments: Self.segments, chain: Self.chain(3)))
        // One digest short, or digests without the outbox's section (written before it had one).
        #expect(StartPlan.outboxReplaysInBackground(segments: Self.segments, chain: Self.chain(1)))
        #expect(StartPlan.outboxReplaysInBackground(segments: Self.segments, chain: Self.chain(2, sections: ["triggers"])))
        // A single sealed segment is a day at most: read now, whatever the digests.
        #expect(!StartPlan.outboxReplaysInBackground(segments: Array(Self.segments.suffix(2)), chain: Self.chain(0)))
    }

    @Test func afterEveryDigestOnePassReadsTheActiveSegmentForEveryone() {
        let reading = StartPlan.afterDigests(replayFrom: 300, segments: Self.segments, reportsFrom: 100, readWhileOpening: false)
        #expect(reading == .everyone(from: 300))
        #expect(StartPlan.afterDigests(replayFrom: 300, segments: Self.segments, reportsFrom: 100, readWhileOpening: true) == nil)
    }

    @Test func aMissingDigestLeavesThePostbacksToTheBackgroundWhenReportsCanSkip() {
        // Digests through 100; the report path needs segments from 200 on: it reads them now, the
        // ledger and the Apps view read from 100 on in the background.
        let reading = StartPlan.afterDigests(replayFrom: 100, segments: Self.segments, reportsFrom: 200, readWhileOpening: false)
        #expect(reading == StartPlan.Reading(from: 200, everyone: false, postbacksFrom: 100))
        // Reports need everything after the digests anyway (keys never rotated): one pass.
        #expect(StartPlan.afterDigests(replayFrom: 100, segments: Self.segments, reportsFrom: 0, readWhileOpening: false)
            == .everyone(from: 100))
    }

    @Test func withoutDigestsReportsReadNowAndPostbacksFromTheFirstSegment() {
        #expect(StartPlan.withoutDigests(segments: Self.segments, reportsFrom: 200) == StartPlan.Reading(from: 200, everyone: false, postbacksFrom: 0))
        #expect(StartPlan.withoutDigests(segments: Self.segments, reportsFrom: 0) == .everyone(from: 0))
        // Retention removed the first segments: "first" is the oldest kept.
        let kept = Array(Self.segments.dropFirst(2))
        #expect(StartPlan.withoutDigests(segments: kept, reportsFrom: 200) == .everyone(from: 200))
        #expect(StartPlan.withoutDigests(segments: [], reportsFrom: 0) == .everyone(from: 0))
    }

    @Test func reportsNeedOnlySegmentsThatEndAfterTheirOldestTriggerOrToken() {
        // Triggers from day 2; tokens from day 1: the segment of day 1 is the first needed (less a
        // day's slack for a clock stepped back, which reaches day 0's last record).
        let from = RecoveredState.reportStateFrom(Self.segments, triggersFrom: Timestamp(millisecondsSinceEpoch: 2 * Self.day),
                                                  tokensFrom: Timestamp(millisecondsSinceEpoch: 2 * Self.day))
        #expect(from == 100)
        // A key of unknown age (`--token-public-key`): everything.
        #expect(RecoveredState.reportStateFrom(Self.segments, triggersFrom: Timestamp(millisecondsSinceEpoch: 3 * Self.day),
                                               tokensFrom: nil) == 0)
        // Nothing sealed is recent enough: the active segment.
        #expect(RecoveredState.reportStateFrom(Self.segments, triggersFrom: Timestamp(millisecondsSinceEpoch: 9 * Self.day),
                                               tokensFrom: Timestamp(millisecondsSinceEpoch: 9 * Self.day)) == 300)
    }
}
