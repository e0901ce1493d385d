import Primitives
import ReportStore

/// Postbacks in the log: stored ones, and the retries counted against them.
extension ReportStore {
    /// Queues a postback; `steps` is told each step of its record's way to disk. Returns the
    /// record's id, known before it is on disk, or nil when the store is closing.
    @discardableResult
    public func append(_ draft: StoredPostback.Draft, steps: @escaping RecordSteps) -> UInt64? {
        append(kind: .postback, tag: draft.protocol.rawValue, steps: steps,
               payload: { StoredPostback.encodePayload(draft, into: &$0) })
    }

    /// Queues the record of a repeated delivery of stored postback `id`: counted, not stored again.
    public func appendRetry(of id: UInt64, protocol proto: AttributionProtocol, steps: @escaping RecordSteps) {
        append(kind: .postbackRetry, tag: proto.rawValue, steps: steps, payload: { $0.appendLE(id) })
    }

    /// Postbacks received in `[since, until)`, oldest first, read lazily from disk.
    public func postbacks(since: Timestamp? = nil, until: Timestamp? = nil) -> PostbackCursor {
        PostbackCursor(records: records(of: .postback, since: since, until: until))
    }
}

/// Reads stored postbacks one at a time. Not shared between threads.
public final class PostbackCursor: @unchecked Sendable {
    private let records: RecordCursor

    init(records: RecordCursor) {
        self.records = records
    }

    public func next() -> StoredPostback? {
        records.next(StoredPostback.decode)
    }
}
