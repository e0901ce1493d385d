import AttributionCore
import HTTPServer
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
    static let reportKeys = [
        "source_engagement_type", "source_site", "source_id", "attributed_on_site", "trigger_data", "version",
        "source_secret_token", "source_secret_token_signature", "destination_secret_token",
        "destination_secret_token_signature",
    ]

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
        out += "{\"id\":\(report.id),\"received_at\":\"\(report.receivedAt.rfc3339)\",\"protocol\":\"pcm\",\"role\":\"\(report.role.rawValue)\",\"site\":"
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
    private let cursor: ReportCursor

    init(cursor: ReportCursor) {
        self.cursor = cursor
    }

    func next(maxBytes: Int) -> [UInt8]? {
        var text = ""
        while text.utf8.count < maxBytes - 2048, let report = cursor.next() {
            ExportLine.write(report, to: &text)
        }
        return text.isEmpty ? nil : Array(text.utf8)
    }
}
