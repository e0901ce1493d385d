import AppDevelopers
import AppleAds
import AppleAdsRecords
import Primitives
import RecordLog

/// Every Apple Ads token taken, with where it stands and Apple's record, as `/api/apple-ads`
/// lists it: one line (or CSV row) per token, every column on every line (null when absent),
/// Apple's fields under Apple's names, and the registered names beside the ids.
///
/// First the tokens settled by an earlier version's final calls (which do not carry their
/// token), from the outbox, by id; then the other final tokens, from their final calls' records,
/// in the order they were answered, read from the log as the socket drains (a final call carries
/// its token's summary); last the tokens still waiting, from the outbox, by id.
///
/// `{"id":"…","received_at":"…","site":"app.example","status":"attributed","calls":1,
///   "last_http_status":200,"answered_at":"…","attribution":true,"orgId":…,…,"supplyPlacement":null,
///   "campaign_name":"…","ad_group_name":null,"keyword_name":null}`
enum AppleAdsExport {
    static let columns = ["id", "received_at", "site", "status", "calls", "last_http_status", "answered_at"]
        + AppleAdsRecord.fieldNames + ["campaign_name", "ad_group_name", "keyword_name"]

    /// The rows of the tokens received in `[since, until)`. The outbox's snapshot is taken before
    /// the log is read: a token final by then has its record in what is read, and one still
    /// waiting then is listed as waiting, its final record (if it comes meanwhile) passed over.
    static func rows(outbox: AppleAdsOutbox, store: RecordLog, since: Timestamp?, until: Timestamp?,
                     naming: AppleAdsNaming) -> () -> ExportRow? {
        let (legacy, pending) = outbox.exportSnapshot(since: since, until: until)
        let waiting = Set(pending.map(\.tokenID))
        // A token's calls come after it, and its final one within its 24 hours (later only if the
        // endpoint was down when they ended: `settledWithin` leaves room for that).
        let calls = store.records(of: .appleAdsCall, since: since,
                                  until: until.map { Timestamp(millisecondsSinceEpoch: $0.millisecondsSinceEpoch + settledWithin) })
        var old = legacy.sorted { $0.tokenID < $1.tokenID }.makeIterator()
        var open = pending.sorted { $0.tokenID < $1.tokenID }.makeIterator()
        return {
            if let entry = old.next() { return row(entry, naming: naming) }
            let settled = calls.next { view -> AppleAdsOutbox.Entry? in
                guard let call = StoredAppleAdsCall.decode(view), call.status.isFinal, let token = call.token,
                      !waiting.contains(call.tokenID), since.map({ token.receivedAt >= $0 }) ?? true,
                      until.map({ token.receivedAt < $0 }) ?? true else { return nil }
                return AppleAdsOutbox.Entry.settled(call, token)
            }
            if let settled { return row(settled, naming: naming) }
            return open.next().map { row($0, naming: naming) }
        }
    }

    /// How long after `until` the export reads final calls: a token's 24 hours, and six days for
    /// an endpoint that was down when they ended. A token settled later still (its expiry
    /// recorded at a start after a longer outage) is listed by an export whose period has no end.
    static let settledWithin: Int64 = 7 * 86_400_000

    static func row(_ entry: AppleAdsOutbox.Entry, naming: AppleAdsNaming) -> ExportRow {
        func string(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        func number<T: BinaryInteger>(_ value: T?) -> JSONValue { value.map { .number("\($0)") } ?? .null }
        let r = entry.record
        let values: [JSONValue] = [
            string(entry.publicID), string(entry.receivedAt.rfc3339), string(entry.site), string(entry.status.name),
            number(entry.calls), number(entry.lastHTTPStatus), string(entry.answeredAt?.rfc3339),
        ] + AppleAdsRecord.fieldValues(r) + [
            string(naming.campaign(r?.campaignID)), string(naming.adGroup(r?.adGroupID, campaign: r?.campaignID)),
            string(naming.keyword(r?.keywordID, campaign: r?.campaignID)),
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
