import Primitives
import RecordLog
import SiteOwners

/// A stored trigger as the exports show it: the conversion the advertiser's pixel redirect
/// reported, under PCM's own words.
///
/// `{"id":4,"received_at":"…","site":"shop.example","trigger_data":5,"priority":0,"attribution_source":null}`
public struct TriggerExportCodec: RecordCodec {
    public let kind = RecordKind.trigger
    public let columns = ["id", "received_at", "site", "trigger_data", "priority", "attribution_source"]

    public init() {}

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        { view in StoredTrigger.decode(view).map(Self.row) }
    }

    static func row(_ trigger: Trigger) -> ExportRow {
        let members = [
            JSONMember(key: "id", value: .number(String(trigger.id))),
            JSONMember(key: "received_at", value: .string(trigger.recordedAt.rfc3339)),
            JSONMember(key: "site", value: .string(trigger.site)),
            JSONMember(key: "trigger_data", value: .number(String(trigger.triggerData))),
            JSONMember(key: "priority", value: .number(String(trigger.priority))),
            JSONMember(key: "attribution_source", value: trigger.attributionSource.map { .string($0) } ?? .null),
        ]
        let cells = [String(trigger.id), trigger.recordedAt.rfc3339, trigger.site, String(trigger.triggerData),
                     String(trigger.priority), trigger.attributionSource ?? ""]
        return ExportRow(members: members, cells: cells)
    }
}
