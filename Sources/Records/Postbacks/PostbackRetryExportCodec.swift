import Primitives
import RecordLog

/// A repeated delivery of a stored postback as the exports show it: when it came and which
/// postback (this node's record id) it repeated. Devices resend a postback up to nine times;
/// each copy is counted, never stored as a postback again.
///
/// `{"id":9,"received_at":"…","protocol":"skadnetwork","retry_of":3}`
public struct PostbackRetryExportCodec: RecordCodec {
    public let kind = RecordKind.postbackRetry
    public let columns = ["id", "received_at", "protocol", "retry_of"]

    public init() {}

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        { view in
            guard let original = RecordLog.retry(view)?.original else { return nil }
            let proto = AttributionProtocol(rawValue: view.tag)?.name ?? "unknown"
            let members = [
                JSONMember(key: "id", value: .number(String(view.id))),
                JSONMember(key: "received_at", value: .string(view.time.rfc3339)),
                JSONMember(key: "protocol", value: .string(proto)),
                JSONMember(key: "retry_of", value: .number(String(original))),
            ]
            return ExportRow(members: members, cells: [String(view.id), view.time.rfc3339, proto, String(original)])
        }
    }
}
