import PCMRecords
import Postbacks
import ReportStore

/// What a start rebuilds from the log before it serves: the triggers a report may still use, the
/// postback ledger's window, and the verified PCM tokens. Each takes the digests of sealed
/// segments (`SegmentDigests`) and then the records written since, in log order.
struct RebuiltAtStart {
    let triggers: TriggerReplay
    let ledger: PostbackLedger
    let tokens: TokenChecks

    var owners: [any SegmentDigestOwner] { [triggers, ledger, tokens] }

    /// Takes one record as replay shows it.
    func take(_ record: ReportStore.RecordView) {
        triggers.take(record)
        ledger.take(record)
        if let verified = StoredReport.withVerifiedToken(record) { tokens.take(verified) }
    }
}
