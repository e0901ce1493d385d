import Primitives
import RecordLog
import SiteOwners

/// PCM's records in the log: reports and triggers, encoded and decoded here, kept by the store
/// without its reading them.
extension RecordLog {
    public typealias Completion = @Sendable (Result<StoredReport, StoreError>) -> Void
    public typealias TriggerCompletion = @Sendable (Result<Trigger, StoreError>) -> Void

    /// Queues a report. `completion` runs on the committing thread once the report is on disk
    /// (with its id and receive time) or could not be written.
    public func append(_ draft: StoredReport.Draft, completion: @escaping Completion) {
        append(kind: .report, tag: draft.protocol.rawValue,
               completion: { result in completion(result.map { StoredReport(draft, $0) }) },
               payload: { StoredReport.encodePayload(draft, into: &$0) })
    }

    /// Queues a report whose owner follows its steps (`append(kind:tag:steps:payload:)`): the owner
    /// makes the stored report from its draft and the record (`StoredReport(_:_:)`) at whichever
    /// step it needs it, so that it is made once.
    public func append(_ draft: StoredReport.Draft, steps: @escaping RecordSteps) {
        append(kind: .report, tag: draft.protocol.rawValue, steps: steps,
               payload: { StoredReport.encodePayload(draft, into: &$0) })
    }

    /// As `appendTrigger(…completion:)`, telling each step of the record's way to disk.
    public func appendTrigger(site: String, triggerData: UInt8, priority: UInt8, attributionSource: String?,
                              steps: @escaping RecordSteps) {
        append(kind: .trigger, tag: AttributionProtocol.pcm.rawValue, steps: steps, payload: {
            StoredTrigger.encodePayload(site: site, triggerData: triggerData, priority: priority,
                                        attributionSource: attributionSource, into: &$0)
        })
    }

    /// Queues a conversion trigger for the ledger; the store gives it an id and the time.
    public func appendTrigger(site: String, triggerData: UInt8, priority: UInt8, attributionSource: String?,
                              completion: @escaping TriggerCompletion) {
        append(kind: .trigger, tag: AttributionProtocol.pcm.rawValue, completion: { result in
            completion(result.map { record in
                Trigger(id: record.id, recordedAt: record.time, site: site, triggerData: triggerData, priority: priority,
                        attributionSource: attributionSource)
            })
        }, payload: {
            StoredTrigger.encodePayload(site: site, triggerData: triggerData, priority: priority,
                                        attributionSource: attributionSource, into: &$0)
        })
    }

    /// Reports received in `[since, until)`, oldest first, read lazily from disk.
    public func reports(since: Timestamp? = nil, until: Timestamp? = nil) -> ReportCursor {
        ReportCursor(records: records(of: .report, since: since, until: until))
    }

    /// Every report from offset `start` (a record boundary) up to `end`, in order, bodies
    /// included; stops early when `visit` returns false. Reads, never writes.
    public func scanReports(from start: Int = 0, through end: Int, _ visit: (StoredReport) -> Bool) {
        var strings = InternedStrings()
        scanRecords(of: .report, from: start, through: end) { record in
            guard let report = StoredReport.decode(record, strings: &strings) else { return true }
            return visit(report)
        }
    }
}

/// Reads stored reports one at a time. Not shared between threads.
public final class ReportCursor: @unchecked Sendable {
    private let records: RecordCursor
    private var strings = InternedStrings()

    init(records: RecordCursor) {
        self.records = records
    }

    /// The next report in range, or nil at the end.
    public func next() -> StoredReport? {
        records.next { StoredReport.decode($0, strings: &strings) }
    }
}

/// What replay gives the trigger ledger: the triggers in the log, and the ids of those a stored
/// report already used. Built by showing it every record as the store replays its log.
public struct ReplayedTriggers: Sendable {
    public var triggers: [Trigger] = []
    public var consumed: Set<UInt64> = []

    public init() {}

    public mutating func take(_ record: RecordLog.RecordView) {
        if record.kind == RecordKind.trigger.number, let trigger = StoredTrigger.decode(record) {
            triggers.append(trigger)
        } else if record.kind == RecordKind.report.number, let used = StoredReport.peekTriggerID(record.payload) {
            consumed.insert(used)
        }
    }
}

extension StoredReport {
    /// The report a draft becomes once the store gave it an id, a time and a place.
    public init(_ draft: Draft, _ record: RecordLog.AppendedRecord) {
        self.init(id: record.id, receivedAt: record.time, protocol: draft.protocol, role: draft.role,
                  verdict: draft.verdict, reasons: draft.reasons, body: draft.body, triggerID: draft.triggerID,
                  campaign: draft.campaign, triggerRecordedAt: draft.triggerRecordedAt)
        tokenKeyIDs = draft.tokenKeyIDs
        recordEnd = record.recordEnd
    }
}
