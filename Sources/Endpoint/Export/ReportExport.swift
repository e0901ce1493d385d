import PCM
import Primitives
import SiteOwners
import HTTPServer
import PCMRecords
import ReportStore

/// One stored report as a line of the NDJSON export:
///
/// `{"id":7,"received_at":"…","protocol":"pcm","role":"source","site":"news.example",
///   "verdict":"accepted","reasons":[],"source_engagement_type":"click",…,"extra":{…}}`
///
/// The report's fields keep their wire names at the top level (dash-named bodies appear
/// normalized); fields the endpoint does not know sit under `extra`, so they can never collide
/// with the endpoint's own keys.
enum ExportLine {
    static let reportKeys = PCMReportValidator.Fields.names

    static func write(_ report: StoredReport, to out: inout String) {
        var fields: [String: JSONValue] = [:]
        var extra: [JSONMember] = []
        // The body was valid when stored; parse it as plain JSON, without today's site rules.
        if case .object(let members)? = try? JSONParser(maxDepth: 64).parse(report.body) {
            for member in members {
                let key = PCMReportValidator.dashKeys[member.key] ?? member.key
                if reportKeys.contains(key) { fields[key] = member.value } else { extra.append(member) }
            }
        }
        let siteKey = report.role == .source ? "source_site" : "attributed_on_site"
        out += "{\"id\":\(report.id),\"received_at\":\"\(report.receivedAt.rfc3339)\",\"protocol\":\"\(report.protocol.name)\",\"role\":\"\(report.role.rawValue)\",\"site\":"
        (fields[siteKey] ?? .null).write(to: &out)
        out += ",\"verdict\":\"\(report.verdict.name)\",\"reasons\":["
        for (i, reason) in report.reasons.enumerated() {
            if i > 0 { out += "," }
            JSONValue.writeString(reason, to: &out)
        }
        out += "]"
        if let trigger = report.triggerID { out += ",\"trigger_id\":\(trigger)" }
        if let campaign = report.campaign {
            out += ",\"campaign\":"
            JSONValue.writeString(campaign, to: &out)
        }
        // Which key verified each token: a rotation shows here first.
        if let id = report.tokenKeyIDs.source { out += ",\"source_token_key_id\":\"\(id)\"" }
        if let id = report.tokenKeyIDs.destination { out += ",\"destination_token_key_id\":\"\(id)\"" }
        for key in reportKeys {
            guard let value = fields[key] else { continue }
            out += ",\"\(key)\":"
            value.write(to: &out)
        }
        if !extra.isEmpty {
            out += ",\"extra\":"
            JSONValue.object(extra).write(to: &out)
        }
        out += "}\n"
    }
}

/// Streams the export from disk as the socket drains, a few dozen kilobytes at a time.
final class ReportExportStream: HTTPBodyStream, @unchecked Sendable {
    enum Format { case ndjson, csv }

    private let cursor: ReportCursor
    private let format: Format
    private var wroteHeader = false

    init(cursor: ReportCursor, format: Format) {
        self.cursor = cursor
        self.format = format
    }

    func next(maxBytes: Int) -> [UInt8]? {
        var text = ""
        if format == .csv && !wroteHeader {
            text = CSVLine.header
            wroteHeader = true
        }
        while text.utf8.count < maxBytes - 2048, let report = cursor.next() {
            switch format {
            case .ndjson: ExportLine.write(report, to: &text)
            case .csv: CSVLine.write(report, to: &text)
            }
        }
        return text.isEmpty ? nil : Array(text.utf8)
    }
}

/// One stored report as an RFC 4180 CSV row, the same facts as the NDJSON line (reasons joined
/// by `;`, tokens left out but the ids of the keys that verified them kept).
enum CSVLine {
    static let columns = ["id", "received_at", "protocol", "role", "site", "verdict", "reasons", "source_site", "source_id",
                          "attributed_on_site", "trigger_data", "version", "campaign", "trigger_id",
                          "source_token_key_id", "destination_token_key_id"]
    static let header = columns.joined(separator: ",") + "\r\n"

    static func write(_ report: StoredReport, to out: inout String) {
        var fields: [String: JSONValue] = [:]
        if case .object(let members)? = try? JSONParser(maxDepth: 64).parse(report.body) {
            for member in members { fields[PCMReportValidator.dashKeys[member.key] ?? member.key] = member.value }
        }
        func text(_ key: String) -> String {
            switch fields[key] {
            case .string(let s)?: s
            case .number(let n)?: n
            default: ""
            }
        }
        let site = report.role == .source ? text("source_site") : text("attributed_on_site")
        let row = [String(report.id), report.receivedAt.rfc3339, report.protocol.name, report.role.rawValue, site, report.verdict.name,
                   report.reasons.joined(separator: ";"), text("source_site"), text("source_id"), text("attributed_on_site"),
                   text("trigger_data"), text("version"), report.campaign ?? "", report.triggerID.map(String.init) ?? "",
                   report.tokenKeyIDs.source ?? "", report.tokenKeyIDs.destination ?? ""]
        out += row.map(CSV.field).joined(separator: ",") + "\r\n"
    }
}
