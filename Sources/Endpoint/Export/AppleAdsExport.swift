import AppDevelopers
import AppleAds
import Primitives
import ReportStore

/// Every Apple Ads token taken, with where it stands and Apple's record, as `/api/apple-ads`
/// lists it: one line (or CSV row) per token, every column on every line (null when absent),
/// Apple's fields under Apple's names, and the registered names beside the ids. From the
/// outbox's memory, which joins each token with its calls, not from one kind of record.
///
/// `{"id":"…","received_at":"…","site":"app.example","status":"attributed","calls":1,
///   "last_http_status":200,"answered_at":"…","attribution":true,"orgId":…,…,"clickDate":null,
///   "campaign_name":"…","ad_group_name":null,"keyword_name":null}`
enum AppleAdsExport {
    static let columns = ["id", "received_at", "site", "status", "calls", "last_http_status", "answered_at"]
        + AppleAdsRecord.fieldNames + ["campaign_name", "ad_group_name", "keyword_name"]

    static func row(_ entry: AppleAdsOutbox.Entry, registry: AppRegistry) -> ExportRow {
        func string(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        func number<T: BinaryInteger>(_ value: T?) -> JSONValue { value.map { .number("\($0)") } ?? .null }
        let r = entry.record
        let campaign = registry.appleAdsCampaign(id: r?.campaignID)
        let values: [JSONValue] = [
            string(entry.publicID), string(entry.receivedAt.rfc3339), string(entry.site), string(entry.status.name),
            number(entry.calls), number(entry.lastHTTPStatus), string(entry.answeredAt?.rfc3339),
            r.map { .bool($0.attribution) } ?? .null, number(r?.orgID), number(r?.campaignID), number(r?.adGroupID),
            number(r?.keywordID), number(r?.adID), string(r?.conversionType), string(r?.claimType), string(r?.countryOrRegion),
            string(r?.clickDate), string(campaign?.name), string(campaign?.adGroupName(r?.adGroupID)),
            string(campaign?.keywordName(r?.keywordID)),
        ]
        let cells = values.map { value -> String in
            switch value {
            case .null: ""
            case .string(let text): text
            case .number(let text): text
            case .bool(let flag): flag ? "true" : "false"
            default: value.serialized()
            }
        }
        return ExportRow(members: zip(columns, values).map { JSONMember(key: $0, value: $1) }, cells: cells)
    }
}
