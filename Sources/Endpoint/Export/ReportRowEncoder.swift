import ClickHouseExport
import PCM
import PCMRecords
import Primitives
import ReportStore

/// `pcm_reports`' rows and their `pcm_report_counts` key, written straight from the stored
/// report's bytes: the table's columns in order, as `ReportExportCodec.forWarehouse` through the
/// table's columns writes them (ReportRowEncoderTests holds the two equal on every recorded log).
/// This runs for every report at the node's full ingest rate, on a core the event loop may share,
/// so it makes nothing per record: no report, no String, no array. Only the body WebKit sends is
/// taken here: a flat object of the six fields, with plain strings and integers. A body with a
/// token, a key of another form, or an escape goes through the codec.
struct ReportRowEncoder: ClickHouseRowEncoder {
    /// The table's columns this writes, in order. Every literal here is a StaticString: bytes in
    /// the binary, copied without the reference counting a static array of arrays costs on each
    /// use (it showed in the profile at full ingest). ReportRowEncoderTests holds the rows and
    /// counts byte-equal to what the table's columns write.
    private enum Column {
        case `protocol`, role, site, verdict, reasons, campaign, triggerID, engagement, sourceSite, sourceID, destination
        case triggerData, version, hasTokens, triggerRecordedAt

        /// `,"name":`
        var key: StaticString {
            switch self {
            case .protocol: #","protocol":"#
            case .role: #","role":"#
            case .site: #","site":"#
            case .verdict: #","verdict":"#
            case .reasons: #","reasons":"#
            case .campaign: #","campaign":"#
            case .triggerID: #","trigger_id":"#
            case .engagement: #","source_engagement_type":"#
            case .sourceSite: #","source_site":"#
            case .sourceID: #","source_id":"#
            case .destination: #","attributed_on_site":"#
            case .triggerData: #","trigger_data":"#
            case .version: #","version":"#
            case .hasTokens: #","has_tokens":"#
            case .triggerRecordedAt: #","trigger_recorded_at_ms":"#
            }
        }
    }

    /// The rollup's key columns, in `ClickHouseTables.reportCounts`' order.
    private enum CountKey {
        case day, role, accepted, late, verified, hasTokens, quarantineReasons, sourceSite, sourceID, campaign, destination
        case triggerData, delayBucket

        var key: StaticString {
            switch self {
            case .day: #","day":"#
            case .role: #","role":"#
            case .accepted: #","accepted":"#
            case .late: #","late":"#
            case .verified: #","verified":"#
            case .hasTokens: #","has_tokens":"#
            case .quarantineReasons: #","quarantine_reasons":"#
            case .sourceSite: #","source_site":"#
            case .sourceID: #","source_id":"#
            case .campaign: #","campaign":"#
            case .destination: #","attributed_on_site":"#
            case .triggerData: #","trigger_data":"#
            case .delayBucket: #","delay_bucket":"#
            }
        }
    }

    /// The six fields as the body has them: where a string's content or an integer's digits lie
    /// in the payload.
    private struct Body {
        var engagement: Range<Int>?, sourceSite: Range<Int>?, sourceID: Range<Int>?
        var destination: Range<Int>?, triggerData: Range<Int>?, version: Range<Int>?
    }

    private static func protocolName(_ recordProtocol: AttributionProtocol) -> StaticString {
        switch recordProtocol {
        case .pcm: #""pcm""#
        case .skadnetwork: #""skadnetwork""#
        case .adattributionkit: #""adattributionkit""#
        case .appleAds: #""apple_ads""#
        }
    }

    mutating func encode(_ view: ReportStore.RecordView, prefix: [UInt8], into out: inout [UInt8], key: inout [UInt8]) -> Bool {
        let p = view.payload
        guard let layout = StoredReport.Layout(p), layout.sourceTokenKeyID == nil, layout.destinationTokenKeyID == nil,
              let recordProtocol = AttributionProtocol(logTag: view.tag),
              let body = Self.scan(p, layout.body),
              let engagement = body.engagement, let sourceSite = body.sourceSite, let sourceID = body.sourceID,
              let destination = body.destination, let triggerData = body.triggerData, let version = body.version,
              let sourceIDValue = Self.fits(p, sourceID, max: 255), let triggerValue = Self.fits(p, triggerData, max: 255),
              Self.fits(p, version, max: 255) != nil,
              // A trigger time before 1970 fits no UInt64 column: the codec keeps it under `extra`.
              (layout.triggerRecordedAt?.millisecondsSinceEpoch ?? 0) >= 0 else { return false }
        func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: p[range]) }
        func append(_ literal: StaticString, to bytes: inout [UInt8]) { literal.withUTF8Buffer { bytes.append(contentsOf: $0) } }
        func put(_ column: Column) { append(column.key, to: &out) }
        func putRaw(_ column: Column, _ content: Range<Int>) {
            put(column)
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes(content))
            out.append(UInt8(ascii: "\""))
        }
        let role: StaticString = layout.role == .source ? #""source""# : #""destination""#
        let accepted = layout.verdict == .accepted
        var late = false, verified = false
        layout.forEachReason(in: p) { reason in
            if reason.elementsEqual("late".utf8) { late = true }
            if reason.elementsEqual("source_token_verified".utf8) || reason.elementsEqual("destination_token_verified".utf8) { verified = true }
        }

        Self.appendEnvelope(view, prefix: prefix, to: &out)
        put(.protocol)
        append(Self.protocolName(recordProtocol), to: &out)
        put(.role)
        append(role, to: &out)
        putRaw(.site, layout.role == .source ? sourceSite : destination)
        put(.verdict)
        append(accepted ? #""accepted""# : #""quarantined""#, to: &out)
        put(.reasons)
        out.append(UInt8(ascii: "["))
        var first = true
        layout.forEachReason(in: p) { reason in
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeString(utf8: reason, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let campaign = layout.campaign {
            put(.campaign)
            JSONValue.writeString(utf8: bytes(campaign), to: &out)
        }
        if let trigger = layout.triggerID {
            put(.triggerID)
            out.appendDecimal(trigger)
        }
        putRaw(.engagement, engagement)
        putRaw(.sourceSite, sourceSite)
        put(.sourceID)
        out.append(contentsOf: bytes(sourceID))
        putRaw(.destination, destination)
        put(.triggerData)
        out.append(contentsOf: bytes(triggerData))
        put(.version)
        out.append(contentsOf: bytes(version))
        put(.hasTokens)
        out.append(UInt8(ascii: "0"))
        put(.triggerRecordedAt)
        if let recorded = layout.triggerRecordedAt {
            out.appendDecimal(recorded.millisecondsSinceEpoch)
        } else {
            out.append(contentsOf: "null".utf8)
        }
        out.append(contentsOf: "}\n".utf8)

        // The key ClickHouseTables.reportCounts makes of the codec's row.
        func count(_ column: CountKey) { append(column.key, to: &key) }
        func flag(_ column: CountKey, _ value: Bool) {
            count(column)
            key.append(value ? UInt8(ascii: "1") : UInt8(ascii: "0"))
        }
        count(.day)
        key.appendDecimal(Int64(SummaryAggregates.day(of: view.time)))
        count(.role)
        append(role, to: &key)
        flag(.accepted, accepted)
        flag(.late, late)
        flag(.verified, verified)
        flag(.hasTokens, false)
        count(.quarantineReasons)
        if accepted {
            append(#""""#, to: &key)
        } else {
            // The reasons joined by commas, as one string: escaping works byte by byte, so each
            // reason escaped in turn is the joined string escaped.
            key.append(UInt8(ascii: "\""))
            var first = true
            layout.forEachReason(in: p) { reason in
                if !first { key.append(UInt8(ascii: ",")) }
                first = false
                JSONValue.writeStringContent(utf8: reason, to: &key)
            }
            key.append(UInt8(ascii: "\""))
        }
        count(.sourceSite)
        key.append(UInt8(ascii: "\""))
        key.append(contentsOf: bytes(sourceSite))
        key.append(UInt8(ascii: "\""))
        count(.sourceID)
        key.appendDecimal(sourceIDValue)
        count(.campaign)
        if let campaign = layout.campaign {
            JSONValue.writeString(utf8: bytes(campaign), to: &key)
        } else {
            append(#""""#, to: &key)
        }
        count(.destination)
        key.append(UInt8(ascii: "\""))
        key.append(contentsOf: bytes(destination))
        key.append(UInt8(ascii: "\""))
        count(.triggerData)
        key.appendDecimal(triggerValue)
        count(.delayBucket)
        let delayBucket = layout.triggerRecordedAt.map {
            SummaryAggregates.delayBucket(hours: Int((view.time.millisecondsSinceEpoch - $0.millisecondsSinceEpoch) / 3_600_000))
        } ?? -1
        key.appendDecimal(Int64(delayBucket))
        return true
    }

    /// The digits of a JSON integer no larger than `max`: as the codec's column would take it.
    private static func fits(_ p: UnsafeRawBufferPointer, _ digits: Range<Int>, max: UInt64) -> UInt64? {
        guard digits.count <= 3, p[digits.lowerBound] != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var value: UInt64 = 0
        for i in digits {
            guard p[i] >= 48, p[i] <= 57 else { return nil }
            value = value * 10 + UInt64(p[i] - 48)
        }
        return value <= max ? value : nil
    }

    /// The six fields of a flat object holding them alone, once each; nil for anything else.
    private static func scan(_ b: UnsafeRawBufferPointer, _ range: Range<Int>) -> Body? {
        var body = Body()
        var i = range.lowerBound
        let end = range.upperBound
        func skipSpace() { while i < end, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        func string() -> Range<Int>? {
            guard i < end, b[i] == UInt8(ascii: "\"") else { return nil }
            let start = i + 1
            var j = start
            while j < end, b[j] != UInt8(ascii: "\"") {
                guard b[j] != UInt8(ascii: "\\"), b[j] >= 0x20 else { return nil }
                j += 1
            }
            guard j < end else { return nil }
            i = j + 1
            return start..<j
        }
        func integer() -> Range<Int>? {
            let start = i
            while i < end, b[i] >= 48, b[i] <= 57 { i += 1 }
            return i > start ? start..<i : nil
        }
        func named(_ key: Range<Int>, _ name: StaticString) -> Bool {
            key.count == name.utf8CodeUnitCount && name.withUTF8Buffer { UnsafeRawBufferPointer(rebasing: b[key]).elementsEqual($0) }
        }
        skipSpace()
        guard i < end, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var seen = 0
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < end, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            if named(key, "source_engagement_type"), body.engagement == nil {
                body.engagement = string()
            } else if named(key, "source_site"), body.sourceSite == nil {
                body.sourceSite = string()
            } else if named(key, "source_id"), body.sourceID == nil {
                body.sourceID = integer()
            } else if named(key, "attributed_on_site"), body.destination == nil {
                body.destination = string()
            } else if named(key, "trigger_data"), body.triggerData == nil {
                body.triggerData = integer()
            } else if named(key, "version"), body.version == nil {
                body.version = integer()
            } else {
                return nil
            }
            seen += 1
            skipSpace()
            guard i < end else { return nil }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            guard b[i] == UInt8(ascii: "}") else { return nil }
            i += 1
            skipSpace()
            guard i == end, seen == 6 else { return nil }
            return body
        }
    }
}
