import PCMRecords
import Postbacks
import ReportStore

/// What a start rebuilds from the log before it serves: the triggers a report may still use, the
/// postback ledger's window, the verified PCM tokens, and the Apps view's counts. Each takes the digests of sealed
/// segments (`SegmentDigests`) and then the records written since, in log order.
struct RebuiltAtStart {
    let triggers: TriggerReplay
    let ledger: PostbackLedger
    let tokens: TokenChecks
    let apps: AppsAggregates

    var owners: [any SegmentDigestOwner] { [triggers, ledger, tokens, apps] }

    /// Takes one record as replay shows it.
    func take(_ record: ReportStore.RecordView) {
        triggers.take(record)
        ledger.take(record)
        apps.take(record)
        if let verified = StoredReport.withVerifiedToken(record) { tokens.take(verified) }
    }
}
