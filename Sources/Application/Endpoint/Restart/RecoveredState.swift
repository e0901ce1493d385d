import PCMRecords
import Postbacks
import Primitives
import RecordLog

/// What a start rebuilds from the log: the triggers a report may still use, the postback
/// ledger's window, the verified PCM tokens, and the Apps view's counts. Each takes the digests of sealed
/// segments (`SegmentDigests`) and then the records written since, in log order.
///
/// They come in two parts. Reports need the triggers and the tokens, and browsers never send a
/// report again, so those are whole before the endpoint listens. The ledger and the Apps view
/// can follow on a thread (`PostbackRebuild`) when digests did not cover the sealed segments.
struct RecoveredState {
    let triggers: TriggerReplay
    let ledger: PostbackLedger
    let tokens: TokenChecks
    let apps: AppsAggregates

    var owners: [any SegmentDigestOwner] { [triggers, ledger, tokens, apps] }

    /// Takes one record as replay shows it.
    func take(_ record: RecordLog.RecordView) {
        takeForReports(record)
        takeForPostbacks(record)
    }

    /// What the report path needs.
    func takeForReports(_ record: RecordLog.RecordView) {
        triggers.take(record)
        if let verified = StoredReport.withVerifiedToken(record) { tokens.take(verified) }
    }

    /// What the postback paths and the Apps view need.
    func takeForPostbacks(_ record: RecordLog.RecordView) {
        ledger.take(record)
        apps.take(record)
    }

    /// Records received before this much earlier than the time they must cover are taken to be
    /// in segments already: a clock stepped back (NTP) leaves a segment's last record a little
    /// before its latest.
    static let clockSlack: Int64 = 86_400_000

    /// The base of the first segment that can hold a record the report path needs: a trigger
    /// received since `triggersFrom`, or a token signed since `tokensFrom` (nil: any time, as
    /// with a `--token-public-key`, whose keys' age is unknown). Segments before it end before both.
    static func reportStateFrom(_ segments: [RecordLog.Segment], triggersFrom: Timestamp, tokensFrom: Timestamp?) -> Int {
        guard let first = segments.first else { return 0 }
        guard let tokensFrom else { return first.base }
        let needed = min(triggersFrom, tokensFrom).adding(milliseconds: -clockSlack)
        for segment in segments {
            guard segment.sealed, let last = segment.lastTime else {
                if segment.sealed { continue }
                return segment.base
            }
            if last >= needed { return segment.base }
        }
        return segments.last?.base ?? first.base
    }
}
