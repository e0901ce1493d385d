import Primitives
import RecordLog

/// A postback an app's development URL took, as the log keeps it: the app the URL is for, and the
/// postback as the well-known paths keep theirs (`StoredPostback.Draft`: its site is the app's,
/// its reasons `development_path`). In no ledger and no count; the relays send it only to a
/// destination that asks for development postbacks.
///
/// Payload: `u8 format (1) · u64 app id ·` a postback's payload.
public struct StoredDevelopmentPostback: Sendable, Equatable {
    public var id: UInt64
    public var receivedAt: Timestamp
    public var appID: Int
    public var draft: StoredPostback.Draft

    public init(id: UInt64, receivedAt: Timestamp, appID: Int, draft: StoredPostback.Draft) {
        self.id = id
        self.receivedAt = receivedAt
        self.appID = appID
        self.draft = draft
    }

    public static func decode(_ record: RecordLog.RecordView) -> StoredDevelopmentPostback? {
        guard record.kind == RecordKind.developmentPostback.number, let proto = AttributionProtocol(logTag: record.tag) else { return nil }
        var r = PayloadReader(record.payload)
        guard r.u8() == 1, let app = r.u64(), let appID = Int(exactly: app), let draft = StoredPostback.decodeDraft(&r, proto: proto) else {
            return nil
        }
        return StoredDevelopmentPostback(id: record.id, receivedAt: record.time, appID: appID, draft: draft)
    }
}

extension RecordLog {
    /// Queues a development URL's postback; `completion` runs once it is on disk (or cannot be).
    @discardableResult
    public func appendDevelopmentPostback(appID: Int, _ draft: StoredPostback.Draft,
                                          completion: @escaping @Sendable (Result<(id: UInt64, at: Timestamp), StoreError>) -> Void) -> UInt64? {
        append(kind: .developmentPostback, tag: draft.protocol.rawValue, completion: { completion($0.map { ($0.id, $0.time) }) }, payload: { out in
            out.append(1)
            out.appendLE(UInt64(max(appID, 0)))
            StoredPostback.encodePayload(draft, into: &out)
        })
    }
}
