import Primitives
import RecordLog

/// Postbacks in the log: stored ones, and the retries counted against them.
extension RecordLog {
    /// Queues a postback; `steps` is told each step of its record's way to disk. Returns the
    /// record's id, known before it is on disk, or nil when the store is closing.
    @discardableResult
    public func append(_ draft: StoredPostback.Draft, steps: @escaping RecordSteps) -> UInt64? {
        appendPostback(draft, steps: steps)?.id
    }

    /// As `append(_:steps:)`, with where the postback is stored: its id and its origin (the
    /// record's day, known before it is on disk, and its site).
    public func appendPostback(_ draft: StoredPostback.Draft, steps: @escaping RecordSteps) -> (id: UInt64, origin: PostbackOrigin)? {
        guard let queued = appendWithTime(kind: .postback, tag: draft.protocol.rawValue, steps: steps,
                                          payload: { StoredPostback.encodePayload(draft, into: &$0) }) else { return nil }
        return (queued.id, PostbackOrigin(receivedAt: queued.time, site: draft.site))
    }

    /// Queues the record of a repeated delivery of stored postback `id` to `site`: counted, not
    /// stored again, at the postback's `origin`. Payload: `u64 id · u8 length · site · i32 day ·
    /// u8 length · site` (the last two the origin's; records written before it was kept end after
    /// the first site, and those written before the site was kept hold the id alone).
    public func appendRetry(of id: UInt64, protocol proto: AttributionProtocol, site: String = "", origin: PostbackOrigin? = nil,
                            steps: @escaping RecordSteps) {
        append(kind: .postbackRetry, tag: proto.rawValue, steps: steps, payload: { out in
            out.appendLE(id)
            Self.appendText(site, into: &out)
            if let origin {
                out.appendLE(origin.day)
                Self.appendText(origin.site, into: &out)
            }
        })
    }

    /// Cut to 255 bytes at a character's start, so that what is read back is text.
    private static func appendText(_ text: String, into out: inout [UInt8]) {
        var utf8 = Array(text.utf8.prefix(256))
        if utf8.count > 255 {
            var cut = 255
            while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
            utf8 = Array(utf8[..<cut])
        }
        out.append(UInt8(utf8.count))
        out.append(contentsOf: utf8)
    }

    /// What a retry record says: the postback it repeats, the site it was sent to ("" in records
    /// written before the site was kept) and the postback's origin (nil in records written before
    /// it was kept); nil when the record is not one.
    public static func retry(_ view: RecordView) -> (original: UInt64, site: String, origin: PostbackOrigin?)? {
        guard view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 else { return nil }
        let p = view.payload
        let original = p.loadLE(UInt64.self, at: 0)
        func text(at offset: Int) -> (String, next: Int)? {
            guard offset < p.count, offset + 1 + Int(p[offset]) <= p.count else { return nil }
            let end = offset + 1 + Int(p[offset])
            return (String(decoding: UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<end]), as: UTF8.self), end)
        }
        guard let (site, next) = text(at: 8) else { return (original, "", nil) }
        guard next + 4 <= p.count, let (originSite, _) = text(at: next + 4) else { return (original, site, nil) }
        return (original, site, PostbackOrigin(day: p.loadLE(Int32.self, at: next), site: originSite))
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
