import AppleAds
import AppleAdsRecords
import ClickHouseExport
import PCMRecords
import Postbacks
import Primitives

/// Every kind of record the log holds, and its table in ClickHouse: one table per kind, its
/// columns under the protocols' own words, as the NDJSON export names them. A member no column
/// takes is kept in `extra`. `deploy/clickhouse/schema.sql` is this list written out. The one
/// kind without a table is the development URLs' postbacks (kind 7): a developer's tests, never
/// a warehouse's numbers.
///
/// Never exported: the PCM secret tokens and their signatures (the key ids that verified them
/// are), the Apple Ads token and its public id. Nothing the log holds is an IP address, a
/// User-Agent or a device identifier.
enum ClickHouseTables {
    /// The PCM summary's groups, counted per batch: what the cluster's page reads (ClusterSummary).
    static let reportCounts = ClickHouseRollup(name: "pcm_report_counts", keys: [
        .init("day", .int64), .init("role", .string), .init("accepted", .uint8), .init("late", .uint8), .init("verified", .uint8),
        .init("has_tokens", .uint8), .init("quarantine_reasons", .string), .init("source_site", .string), .init("source_id", .uint8),
        .init("campaign", .string), .init("attributed_on_site", .string), .init("trigger_data", .uint8), .init("delay_bucket", .int64),
    ]) { row, time in
        // One pass over the row: this runs for every report exported.
        var role: String?, verdict: String?, sourceSite: String?, destination: String?, sourceID: JSONValue?, triggerData: JSONValue?
        var reasons: [String] = [], campaign = "", hasTokens = JSONValue.bool(false), delayBucket = -1
        for member in row.members {
            switch (member.key, member.value) {
            case ("role", .string(let s)): role = s
            case ("verdict", .string(let s)): verdict = s
            case ("source_site", .string(let s)): sourceSite = s
            case ("attributed_on_site", .string(let s)): destination = s
            case ("source_id", let v): sourceID = v
            case ("trigger_data", let v): triggerData = v
            case ("campaign", .string(let s)): campaign = s
            case ("has_tokens", let v): hasTokens = v
            case ("reasons", .array(let items)): reasons = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
            case ("trigger_recorded_at_ms", .number(let text)):
                if let trigger = Int64(text) {
                    delayBucket = SummaryAggregates.delayBucket(from: Timestamp(millisecondsSinceEpoch: trigger), to: time)
                }
            default: continue
            }
        }
        guard let role, let verdict, let sourceSite, let destination, let sourceID, let triggerData else { return nil }
        let accepted = verdict == "accepted"
        return [.number(String(SummaryAggregates.day(of: time))), .string(role), .bool(accepted), .bool(reasons.contains("late")),
                .bool(SummaryAggregates.hasVerifiedToken(reasons)), hasTokens,
                .string(accepted ? "" : reasons.joined(separator: ",")), .string(sourceSite), sourceID, .string(campaign),
                .string(destination), triggerData, .number(String(delayBucket))]
    }

    /// Every table; `postbackSchema` says which version of its app's schema a postback reads
    /// with, as the exports do (the list of columns does not depend on it).
    static let schema = schema(postbackSchema: { _ in nil })

    static func schema(postbackSchema: @escaping PostbackExportCodec.SchemaVersionReader) -> ClickHouseSchema { ClickHouseSchema(tables: [
        ClickHouseTable(name: "pcm_reports", codec: ReportExportCodec.forWarehouse, columns: [
            .init("protocol", .string), .init("role", .string), .init("site", .string), .init("verdict", .string),
            .init("reasons", .arrayOfStrings), .init("campaign", .string), .init("trigger_id", .nullable(.uint64)),
            .init("source_engagement_type", .string), .init("source_site", .string), .init("source_id", .nullable(.uint8)),
            .init("attributed_on_site", .string), .init("trigger_data", .nullable(.uint8)), .init("version", .nullable(.uint8)),
            .init("source_token_key_id", .string), .init("destination_token_key_id", .string),
            .init("has_tokens", .uint8), .init("trigger_recorded_at_ms", .nullable(.uint64)),
        ], omitted: ["source_secret_token", "source_secret_token_signature", "destination_secret_token", "destination_secret_token_signature"],
           rollup: reportCounts, encoder: { ReportRowEncoder() }),
        ClickHouseTable(name: "pcm_triggers", codec: TriggerExportCodec(), columns: [
            .init("site", .string), .init("trigger_data", .uint8), .init("priority", .uint8),
            .init("attribution_source", .nullable(.string)),
        ]),
        ClickHouseTable(name: "postbacks", codec: PostbackExportCodec.withoutLedger(schema: postbackSchema), columns: [
            .init("protocol", .string), .init("site", .string), .init("verdict", .string), .init("reasons", .arrayOfStrings),
            .init("signature", .string), .init("test_key", .string), .init("kid", .string), .init("unsigned_fields", .arrayOfStrings),
            .init("schema_version", .nullable(.uint16)), .init("schema_ambiguous_versions", .string),
            .init("duplicate_key", .string), .init("content_hash", .uint64),
            .init("version", .string), .init("ad-network-id", .string), .init("campaign-id", .nullable(.uint32)),
            .init("source-identifier", .string), .init("app-id", .nullable(.uint64)), .init("transaction-id", .string),
            .init("redownload", .nullable(.uint8)), .init("source-app-id", .nullable(.uint64)), .init("source-domain", .string),
            .init("fidelity-type", .nullable(.uint8)), .init("did-win", .nullable(.uint8)),
            .init("postback-sequence-index", .nullable(.uint8)), .init("ad-network-identifier", .string),
            .init("advertised-item-identifier", .nullable(.uint64)), .init("conversion-type", .string),
            .init("postback-identifier", .string), .init("impression-type", .string), .init("marketplace-identifier", .string),
            .init("publisher-item-identifier", .nullable(.uint64)), .init("conversion-value", .nullable(.uint8)),
            .init("coarse-conversion-value", .string), .init("ad-interaction-type", .string), .init("country-code", .string),
            .init("attribution-signature", .string), .init("jws-string", .string),
        ]),
        ClickHouseTable(name: "postback_retries", codec: PostbackRetryExportCodec(), columns: [
            .init("protocol", .string), .init("retry_of", .uint64),
        ]),
        ClickHouseTable(name: "apple_ads_tokens", codec: AppleAdsTokenExportCodec(), columns: [
            .init("site", .string),
        ]),
        ClickHouseTable(name: "apple_ads_calls", codec: AppleAdsCallExportCodec(), columns: [
            .init("token_id", .uint64), .init("called", .uint8), .init("http_status", .nullable(.uint16)), .init("status", .string),
            .init("next_attempt", .nullable(.dateTime)), .init("attribution", .nullable(.uint8)), .init("orgId", .nullable(.int64)),
            .init("campaignId", .nullable(.int64)), .init("adGroupId", .nullable(.int64)), .init("keywordId", .nullable(.int64)),
            .init("adId", .nullable(.int64)), .init("conversionType", .string), .init("claimType", .string),
            .init("countryOrRegion", .string), .init("clickDate", .string), .init("impressionDate", .string),
            .init("supplyPlacement", .string),
        ]),
    ]) }
}
