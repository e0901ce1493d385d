import AppDevelopers
import AppleAds
import HTTPServer
import Primitives

/// Every Apple Ads token taken, with where it stands and Apple's record, as `/api/apple-ads`
/// lists it: one line (or CSV row) per token, every column on every line (null when absent),
/// Apple's fields under Apple's names, and the registered names beside the ids.
///
/// `{"id":"…","received_at":"…","site":"app.example","status":"attributed","calls":1,
///   "last_http_status":200,"answered_at":"…","attribution":true,"orgId":…,…,"clickDate":null,
///   "campaign_name":"…","ad_group_name":null,"keyword_name":null}`
enum AppleAdsExport {
    static let columns = ["id", "received_at", "site", "status", "calls", "last_http_status", "answered_at"]
        + AppleAdsRecord.fieldNames + ["campaign_name", "ad_group_name", "keyword_name"]

    /// Each column's value as JSON text (`null` when absent).
    static func values(_ entry: AppleAdsOutbox.Entry, registry: AppRegistry) -> [String] {
        func string(_ text: String?) -> String {
            guard let text else { return "null" }
            var out = ""
            JSONValue.writeString(text, to: &out)
            return out
        }
        func number<T: BinaryInteger>(_ value: T?) -> String { value.map { "\($0)" } ?? "null" }
        let r = entry.record
        let campaign = registry.appleAdsCampaign(id: r?.campaignID)
        return [string(entry.publicID), string(entry.receivedAt.rfc3339), string(entry.site), string(entry.status.name),
                number(entry.calls), number(entry.lastHTTPStatus), string(entry.answeredAt?.rfc3339),
                r.map { "\($0.attribution)" } ?? "null", number(r?.orgID), number(r?.campaignID), number(r?.adGroupID),
                number(r?.keywordID), number(r?.adID), string(r?.conversionType), string(r?.claimType), string(r?.countryOrRegion),
                string(r?.clickDate), string(campaign?.name), string(campaign?.adGroupName(r?.adGroupID)),
                string(campaign?.keywordName(r?.keywordID))]
    }

    static func writeLine(_ entry: AppleAdsOutbox.Entry, registry: AppRegistry, to out: inout String) {
        out += "{" + zip(columns, values(entry, registry: registry)).map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}\n"
    }

    static func writeRow(_ entry: AppleAdsOutbox.Entry, registry: AppRegistry, to out: inout String) {
        out += values(entry, registry: registry).map { value in
            guard value != "null" else { return "" }
            guard value.hasPrefix("\""), case .string(let text)? = try? JSONParser().parse(Array(value.utf8)) else { return value }
            return CSV.field(text)
        }.joined(separator: ",") + "\r\n"
    }
}

/// Writes the export as the socket drains, a few dozen kilobytes at a time, from a snapshot of
/// the entries taken when the request came.
final class AppleAdsExportStream: HTTPBodyStream, @unchecked Sendable {
    private let entries: [AppleAdsOutbox.Entry]
    private let registry: AppRegistry
    private let csv: Bool
    private var next = 0
    private var wroteHeader = false

    init(entries: [AppleAdsOutbox.Entry], registry: AppRegistry, csv: Bool) {
        self.entries = entries
        self.registry = registry
        self.csv = csv
    }

    func next(maxBytes: Int) -> [UInt8]? {
        var text = ""
        if csv && !wroteHeader {
            text = AppleAdsExport.columns.joined(separator: ",") + "\r\n"
            wroteHeader = true
        }
        while text.utf8.count < maxBytes - 2048, next < entries.count {
            if csv {
                AppleAdsExport.writeRow(entries[next], registry: registry, to: &text)
            } else {
                AppleAdsExport.writeLine(entries[next], registry: registry, to: &text)
            }
            next += 1
        }
        return text.isEmpty ? nil : Array(text.utf8)
    }
}
