import AppleAds
import Primitives
import RecordLog

/// A stored Apple Ads token as a warehouse sees it: when and for which site. Neither the token
/// (it would let anyone ask Apple about the install) nor the public id the app reads its answer
/// by (a capability) leaves the node.
///
/// `{"id":2,"received_at":"…","site":"app.example"}`
public struct AppleAdsTokenExportCodec: RecordCodec {
    public let kind = RecordKind.appleAdsToken
    public let columns = ["id", "received_at", "site"]

    public init() {}

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        { view in
            StoredAppleAdsToken.decode(view).map { token in
                ExportRow(members: [JSONMember(key: "id", value: .number(String(token.id))),
                                    JSONMember(key: "received_at", value: .string(token.receivedAt.rfc3339)),
                                    JSONMember(key: "site", value: .string(token.site))],
                          cells: [String(token.id), token.receivedAt.rfc3339, token.site])
            }
        }
    }
}

/// One call to Apple's attribution API as a warehouse sees it: which token (this node's record
/// id), what Apple answered, what the policy made of it, and Apple's record under Apple's names.
/// A token's standing is its latest call.
///
/// `{"id":3,"received_at":"…","token_id":2,"called":true,"http_status":200,"status":"attributed",
///   "next_attempt":null,"attribution":true,"orgId":…,…}`
public struct AppleAdsCallExportCodec: RecordCodec {
    public let kind = RecordKind.appleAdsCall
    static let columnNames = ["id", "received_at", "token_id", "called", "http_status", "status", "next_attempt"] + AppleAdsRecord.fieldNames
    public var columns: [String] { Self.columnNames }

    public init() {}

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        { view in StoredAppleAdsCall.decode(view).map { Self.row($0, id: view.id) } }
    }

    static func row(_ call: StoredAppleAdsCall, id: UInt64) -> ExportRow {
        func number<T: BinaryInteger>(_ value: T?) -> JSONValue { value.map { .number("\($0)") } ?? .null }
        func string(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        let values: [JSONValue] = [
            .number(String(id)), .string(call.at.rfc3339), .number(String(call.tokenID)), .bool(call.called),
            number(call.httpStatus), .string(call.status.name), string(call.nextAttempt?.rfc3339),
        ] + AppleAdsRecord.fieldValues(call.record)
        let cells = values.map { value -> String in
            switch value {
            case .null: ""
            case .string(let text), .number(let text): text
            case .bool(let flag): flag ? "true" : "false"
            default: value.serialized()
            }
        }
        return ExportRow(members: zip(columnNames, values).map { JSONMember(key: $0, value: $1) }, cells: cells)
    }

}
