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

    /// Queues the record of a repeated delivery of stored postback `id` to `site`: counted, not
    /// stored again. Payload: `u64 id · u8 length · site` (records written before the site was
    /// kept hold the id alone).
    public func appendRetry(of id: UInt64, protocol proto: AttributionProtocol, site: String = "", steps: @escaping RecordSteps) {
        append(kind: .postbackRetry, tag: proto.rawValue, steps: steps, payload: { out in
            out.appendLE(id)
            let utf8 = Array(site.utf8.prefix(255))
            out.append(UInt8(utf8.count))
            out.append(contentsOf: utf8)
        })
    }

    /// A retry record's postback id and the site it was sent to ("" in records written before
    /// the site was kept); nil when the record is not one.
    public static func retry(_ view: RecordView) -> (original: UInt64, site: String)? {
        guard view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 else { return nil }
        let original = view.payload.loadLE(UInt64.self, at: 0)
        guard view.payload.count > 8, 9 + Int(view.payload[8]) <= view.payload.count else { return (original, "") }
        return (original, String(decoding: UnsafeRawBufferPointer(rebasing: view.payload[9..<(9 + Int(view.payload[8]))]), as: UTF8.self))
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
