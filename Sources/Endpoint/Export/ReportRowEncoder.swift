import ClickHouseExport
import PCM
import PCMRecords
import Primitives
import ReportStore

/// `pcm_reports`' rows and their `pcm_report_counts` key, written straight from the stored report:
/// the table's columns in order, as `ReportExportCodec.forWarehouse` through the table's columns
/// writes them (ClickHouseExportEncoderTests holds the two equal on every recorded log). Only the
/// body WebKit sends is taken here: a flat object of the six fields, with plain strings and
/// integers. A body with a token, a key of another form, or an escape goes through the codec.
struct ReportRowEncoder: ClickHouseRowEncoder {
    private var strings = InternedStrings()
    /// Each column's `,"name":`, made once.
    private enum Column: Int, CaseIterable {
        case `protocol`, role, site, verdict, reasons, campaign, triggerID, engagement, sourceSite, sourceID, destination
        case triggerData, version, hasTokens, triggerRecordedAt

        static let names = ["protocol", "role", "site", "verdict", "reasons", "campaign", "trigger_id", "source_engagement_type",
                            "source_site", "source_id", "attributed_on_site", "trigger_data", "version", "has_tokens",
                            "trigger_recorded_at_ms"]
        static let keys = names.map { ReportRowEncoder.key($0) }
        var key: [UInt8] { Self.keys[rawValue] }
    }

    /// The six fields as the body has them: the bytes of a string's content, an integer's digits.
    private struct Body {
        var engagement: ArraySlice<UInt8>?, sourceSite: ArraySlice<UInt8>?, sourceID: ArraySlice<UInt8>?
        var destination: ArraySlice<UInt8>?, triggerData: ArraySlice<UInt8>?, version: ArraySlice<UInt8>?
    }

    mutating func encode(_ view: ReportStore.RecordView, prefix: [UInt8], into out: inout [UInt8]) -> [JSONValue]? {
        guard let report = StoredReport.decode(view, strings: &strings), report.tokenKeyIDs.source == nil,
              report.tokenKeyIDs.destination == nil, let body = Self.scan(report.body),
              let engagement = body.engagement, let sourceSite = body.sourceSite, let sourceID = body.sourceID,
              let destination = body.destination, let triggerData = body.triggerData, let version = body.version,
              let sourceIDValue = Self.fits(sourceID, max: 255), let triggerValue = Self.fits(triggerData, max: 255),
              Self.fits(version, max: 255) != nil,
              // A trigger time before 1970 fits no UInt64 column: the codec keeps it under `extra`.
              (report.triggerRecordedAt?.millisecondsSinceEpoch ?? 0) >= 0 else { return nil }
        Self.appendEnvelope(view, prefix: prefix, to: &out)
        func put(_ column: Column, _ bytes: some Sequence<UInt8>) {
            out.append(contentsOf: column.key)
            out.append(contentsOf: bytes)
        }
        func putString(_ column: Column, _ text: String) {
            out.append(contentsOf: column.key)
            JSONValue.writeString(text, to: &out)
        }
        func putRaw(_ column: Column, _ content: ArraySlice<UInt8>) {
            out.append(contentsOf: column.key)
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: content)
            out.append(UInt8(ascii: "\""))
        }
        putString(.protocol, report.protocol.name)
        putString(.role, report.role.rawValue)
        putRaw(.site, report.role == .source ? sourceSite : destination)
        putString(.verdict, report.verdict.name)
        out.append(contentsOf: Column.reasons.key)
        out.append(UInt8(ascii: "["))
        for (i, reason) in report.reasons.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(reason, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let campaign = report.campaign { putString(.campaign, campaign) }
        if let trigger = report.triggerID { put(.triggerID, String(trigger).utf8) }
        putRaw(.engagement, engagement)
        putRaw(.sourceSite, sourceSite)
        put(.sourceID, sourceID)
        putRaw(.destination, destination)
        put(.triggerData, triggerData)
        put(.version, version)
        put(.hasTokens, "0".utf8)
        put(.triggerRecordedAt, report.triggerRecordedAt.map { Array(String($0.millisecondsSinceEpoch).utf8) } ?? Array("null".utf8))
        out.append(contentsOf: "}\n".utf8)

        // The key ClickHouseTables.reportCounts makes of the codec's row.
        let accepted = report.verdict == .accepted
        let delayBucket = report.triggerRecordedAt.map {
            SummaryAggregates.delayBucket(hours: Int((view.time.millisecondsSinceEpoch - $0.millisecondsSinceEpoch) / 3_600_000))
        } ?? -1
        return [.number(String(SummaryAggregates.day(of: view.time))), .string(report.role.rawValue), .bool(accepted),
                .bool(report.reasons.contains("late")), .bool(SummaryAggregates.hasVerifiedToken(report.reasons)), .bool(false),
                .string(accepted ? "" : report.reasons.joined(separator: ",")), .string(String(decoding: sourceSite, as: UTF8.self)),
                .number(String(sourceIDValue)), .string(report.campaign ?? ""), .string(String(decoding: destination, as: UTF8.self)),
                .number(String(triggerValue)), .number(String(delayBucket))]
    }

    /// The digits of a JSON integer no larger than `max`: as the codec's column would take it.
    private static func fits(_ digits: ArraySlice<UInt8>, max: UInt64) -> UInt64? {
        guard let first = digits.first, digits.count <= 3, first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var value: UInt64 = 0
        for d in digits {
            guard d >= 48, d <= 57 else { return nil }
            value = value * 10 + UInt64(d - 48)
        }
        return value <= max ? value : nil
    }

    /// The six fields of a flat object holding them alone, once each; nil for anything else.
    private static func scan(_ b: [UInt8]) -> Body? {
        var body = Body()
        var i = 0
        func skipSpace() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        func string() -> ArraySlice<UInt8>? {
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
            let start = i + 1
            var j = start
            while j < b.count, b[j] != UInt8(ascii: "\"") {
                guard b[j] != UInt8(ascii: "\\"), b[j] >= 0x20 else { return nil }
                j += 1
            }
            guard j < b.count else { return nil }
            i = j + 1
            return b[start..<j]
        }
        func integer() -> ArraySlice<UInt8>? {
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            return i > start ? b[start..<i] : nil
        }
        skipSpace()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var seen = 0
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            switch key.count {
            case 22 where key.elementsEqual("source_engagement_type".utf8) && body.engagement == nil: body.engagement = string()
            case 11 where key.elementsEqual("source_site".utf8) && body.sourceSite == nil: body.sourceSite = string()
            case 9 where key.elementsEqual("source_id".utf8) && body.sourceID == nil: body.sourceID = integer()
            case 18 where key.elementsEqual("attributed_on_site".utf8) && body.destination == nil: body.destination = string()
            case 12 where key.elementsEqual("trigger_data".utf8) && body.triggerData == nil: body.triggerData = integer()
            case 7 where key.elementsEqual("version".utf8) && body.version == nil: body.version = integer()
            default: return nil
            }
            seen += 1
            skipSpace()
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            guard b[i] == UInt8(ascii: "}") else { return nil }
            i += 1
            skipSpace()
            guard i == b.count, seen == 6 else { return nil }
            return body
        }
    }
}
