import Primitives
import ReportStore

/// Postbacks in the log: stored ones, and the retries counted against them.
extension ReportStore {
    public typealias PostbackCompletion = @Sendable (Result<StoredPostback, StoreError>) -> Void

    /// Queues a postback; returns its id (nil when the store is closing). `completion` runs once
    /// it is on disk, or could not be written.
    @discardableResult
    public func append(_ draft: StoredPostback.Draft, completion: @escaping PostbackCompletion) -> UInt64? {
        append(kind: .postback, tag: draft.protocol.rawValue, completion: { result in
            completion(result.map { StoredPostback(id: $0.id, receivedAt: $0.time, draft: draft) })
        }, payload: { StoredPostback.encodePayload(draft, into: &$0) })
    }

    /// Queues the record of a repeated delivery of postback `id`.
    public func appendRetry(of id: UInt64, protocol proto: AttributionProtocol,
                            completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        append(kind: .postbackRetry, tag: proto.rawValue, completion: { completion($0.map { _ in () }) },
               payload: { $0.appendLE(id) })
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
