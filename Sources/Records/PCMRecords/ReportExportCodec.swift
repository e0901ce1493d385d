import PCM
import Primitives
import RecordLog

/// A stored report as the exports show it:
///
/// `{"id":7,"received_at":"…","protocol":"pcm","role":"source","site":"news.example",
///   "verdict":"accepted","reasons":[],"source_engagement_type":"click",…,"extra":{…}}`
///
/// The report's fields keep their wire names at the top level (dash-named bodies appear
/// normalized); fields the endpoint does not know sit under `extra`, so they can never collide
/// with the endpoint's own keys. The CSV row has the same facts (reasons joined by `;`, tokens
/// left out but the ids of the keys that verified them kept).
public struct ReportExportCodec: RecordCodec {
    public let kind = RecordKind.report
    public let columns = ["id", "received_at", "protocol", "role", "site", "verdict", "reasons", "source_site", "source_id",
                          "attributed_on_site", "trigger_data", "version", "campaign", "trigger_id",
                          "source_token_key_id", "destination_token_key_id"]
    static let reportKeys = PCMReportValidator.Fields.names

    /// Whether rows also carry what the summary counts but the export never showed:
    /// `has_tokens` (the body held a secret token) and `trigger_recorded_at_ms` (when the
    /// matching trigger was recorded: the report's delay).
    let forWarehouse: Bool

    public init() {
        forWarehouse = false
    }

    /// For ClickHouse, where the cluster's summary is counted from these rows.
    public static var forWarehouse: ReportExportCodec { ReportExportCodec(forWarehouse: true) }

    private init(forWarehouse: Bool) {
        self.forWarehouse = forWarehouse
    }

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        var strings = InternedStrings()
        let forWarehouse = self.forWarehouse
        return { view in StoredReport.decode(view, strings: &strings).map { Self.row($0, forWarehouse: forWarehouse) } }
    }

    public static func row(_ report: StoredReport) -> ExportRow { row(report, forWarehouse: false) }

    static func row(_ report: StoredReport, forWarehouse: Bool) -> ExportRow {
        // The known fields by their slot (`Fields.slot`: a length and one compare, no hashing):
        // this runs for every report the ClickHouse export sends.
        var known = [JSONValue?](repeating: nil, count: reportKeys.count)
        var extra: [JSONMember] = []
        // The body was valid when stored; read as plain JSON, without today's site rules.
        if case .object(let members)? = try? JSONParser(maxDepth: 64).parse(report.body) {
            for member in members {
                let key = member.key.utf8.contains(UInt8(ascii: "-")) ? PCMReportValidator.dashKeys[member.key] ?? member.key : member.key
                if let slot = PCMReportValidator.Fields.slot(key) { known[slot] = member.value } else { extra.append(member) }
            }
        }
        func field(_ key: String) -> JSONValue? { PCMReportValidator.Fields.slot(key).flatMap { known[$0] } }
        let siteKey = report.role == .source ? "source_site" : "attributed_on_site"
        var members: [JSONMember] = []
        members.reserveCapacity(20)
        // A warehouse takes the id and the time from the log's envelope.
        if !forWarehouse {
            members.append(JSONMember(key: "id", value: .number(String(report.id))))
            members.append(JSONMember(key: "received_at", value: .string(report.receivedAt.rfc3339)))
        }
        members += [
            JSONMember(key: "protocol", value: .string(report.protocol.name)),
            JSONMember(key: "role", value: .string(report.role.rawValue)),
            JSONMember(key: "site", value: field(siteKey) ?? .null),
            JSONMember(key: "verdict", value: .string(report.verdict.name)),
            JSONMember(key: "reasons", value: .array(report.reasons.map { .string($0) })),
        ]
        if let trigger = report.triggerID { members.append(JSONMember(key: "trigger_id", value: .number(String(trigger)))) }
        if let campaign = report.campaign { members.append(JSONMember(key: "campaign", value: .string(campaign))) }
        // Which key verified each token: a rotation shows here first.
        if let id = report.tokenKeyIDs.source { members.append(JSONMember(key: "source_token_key_id", value: .string(id))) }
        if let id = report.tokenKeyIDs.destination { members.append(JSONMember(key: "destination_token_key_id", value: .string(id))) }
        for (slot, key) in reportKeys.enumerated() {
            if let value = known[slot] { members.append(JSONMember(key: key, value: value)) }
        }
        if !extra.isEmpty { members.append(JSONMember(key: "extra", value: .object(extra))) }
        if forWarehouse {
            // As the summary reads them (ReportFacts): a token on either side.
            let hasTokens = field("source_secret_token") != nil || field("destination_secret_token") != nil
            members.append(JSONMember(key: "has_tokens", value: .bool(hasTokens)))
            members.append(JSONMember(key: "trigger_recorded_at_ms",
                                      value: report.triggerRecordedAt.map { .number(String($0.millisecondsSinceEpoch)) } ?? .null))
        }

        func text(_ key: String) -> String {
            switch field(key) {
            case .string(let s)?: s
            case .number(let n)?: n
            default: ""
            }
        }
        let cells = [String(report.id), report.receivedAt.rfc3339, report.protocol.name, report.role.rawValue, text(siteKey),
                     report.verdict.name, report.reasons.joined(separator: ";"), text("source_site"), text("source_id"),
                     text("attributed_on_site"), text("trigger_data"), text("version"), report.campaign ?? "",
                     report.triggerID.map(String.init) ?? "", report.tokenKeyIDs.source ?? "", report.tokenKeyIDs.destination ?? ""]
        return ExportRow(members: members, cells: cells)
    }
}
