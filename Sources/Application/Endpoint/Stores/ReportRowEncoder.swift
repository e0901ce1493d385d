import ClickHouseExport
#if canImport(Glibc)
import Glibc
#endif
import PCM
import PCMRecords
import Primitives
import RecordLog

/// `pcm_reports`' rows and their `pcm_report_counts` key, written straight from the stored
/// report's bytes: the table's columns in order, as `ReportExportCodec.forWarehouse` through the
/// table's columns writes them (ReportRowEncoderTests holds the two equal on every recorded log).
/// This runs for every report at the node's full ingest rate, on a core the event loop may share,
/// so it makes nothing per record: no report, no String, no array. Only the body WebKit sends is
/// taken here: a flat object of the six fields, with plain strings and integers. A body with a
/// token, a key of another form, or an escape goes through the codec.
struct ReportRowEncoder: ClickHouseRowEncoder {
    /// Where a row is written before it is copied into the batch: made once, as large as any
    /// WebKit report's row (a body is a few hundred bytes).
    private var row = [UInt8](repeating: 0, count: 16 << 10)

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

    mutating func encode(_ view: RecordLog.RecordView, prefix: [UInt8], into out: inout [UInt8], key: inout [UInt8]) -> Bool {
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
        let accepted = layout.verdict == .accepted
        // The row after its envelope, into `row`, then into the batch in one copy.
        let written = row.withUnsafeMutableBytes { memory -> Int? in
            var w = ByteWriter(memory)
            func putRaw(_ column: Column, _ content: Range<Int>) {
                w.put(column.key)
                w.put(UInt8(ascii: "\""))
                w.put(bytes(content))
                w.put(UInt8(ascii: "\""))
            }
            /// A stored name as a JSON string: as it is when it needs no escape, which is nearly always.
            func putString(_ text: UnsafeRawBufferPointer) {
                if text.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                    w.put(UInt8(ascii: "\""))
                    w.put(text)
                    w.put(UInt8(ascii: "\""))
                } else {
                    var escaped: [UInt8] = []
                    JSONValue.writeString(utf8: text, to: &escaped)
                    escaped.withUnsafeBytes { w.put($0) }
                }
            }
            w.put(Column.protocol.key)
            w.put(Self.protocolName(recordProtocol))
            w.put(Column.role.key)
            w.put(layout.role == .source ? #""source""# : #""destination""#)
            putRaw(.site, layout.role == .source ? sourceSite : destination)
            w.put(Column.verdict.key)
            w.put(accepted ? #""accepted""# : #""quarantined""#)
            w.put(Column.reasons.key)
            w.put(UInt8(ascii: "["))
            var first = true
            layout.forEachReason(in: p) { reason in
                if !first { w.put(UInt8(ascii: ",")) }
                first = false
                putString(reason)
            }
            w.put(UInt8(ascii: "]"))
            if let campaign = layout.campaign {
                w.put(Column.campaign.key)
                putString(bytes(campaign))
            }
            if let trigger = layout.triggerID {
                w.put(Column.triggerID.key)
                w.putDecimal(trigger)
            }
            putRaw(.engagement, engagement)
            putRaw(.sourceSite, sourceSite)
            w.put(Column.sourceID.key)
            w.put(bytes(sourceID))
            putRaw(.destination, destination)
            w.put(Column.triggerData.key)
            w.put(bytes(triggerData))
            w.put(Column.version.key)
            w.put(bytes(version))
            w.put(Column.hasTokens.key)
            w.put(UInt8(ascii: "0"))
            w.put(Column.triggerRecordedAt.key)
            if let recorded = layout.triggerRecordedAt {
                w.putDecimal(recorded.millisecondsSinceEpoch)
            } else {
                w.put("null")
            }
            w.put("}\n")
            return w.overflowed ? nil : w.count
        }
        // A row longer than `row` (a body of many kilobytes) is the codec's.
        guard let written else { return false }
        Self.appendEnvelope(view, prefix: prefix, to: &out)
        out.append(contentsOf: row[0..<written])

        // The record's group, in short: what the count literals are made of (`appendCountLiterals`).
        key.append(layout.role == .source ? 1 : 2)
        key.append(accepted ? 1 : 0)
        key.appendLE(SummaryAggregates.day(of: view.time))
        key.appendLE(Int64(layout.triggerRecordedAt.map { SummaryAggregates.delayBucket(from: $0, to: view.time) } ?? -1))
        key.append(UInt8(truncatingIfNeeded: sourceIDValue))
        key.append(UInt8(truncatingIfNeeded: triggerValue))
        key.append(UInt8(truncatingIfNeeded: layout.reasonCount))
        func part(_ range: Range<Int>) {
            key.appendLE(UInt32(truncatingIfNeeded: range.count))
            key.append(contentsOf: bytes(range))
        }
        part(layout.reasons)
        part(sourceSite)
        part(destination)
        part(layout.campaign ?? 0..<0)
        return true
    }

    /// The literals `ClickHouseTables.reportCounts` makes of the codec's row, from a key `encode` wrote.
    func appendCountLiterals(ofKey key: [UInt8], to out: inout [UInt8]) -> Bool {
        key.withUnsafeBytes { k in
            guard k.count >= 17 else { return false }
            var parts: [UnsafeRawBufferPointer] = []
            var offset = 17
            while parts.count < 4, offset + 4 <= k.count {
                let length = Int(k.loadLE(UInt32.self, at: offset))
                guard offset + 4 + length <= k.count else { return false }
                parts.append(UnsafeRawBufferPointer(rebasing: k[(offset + 4)..<(offset + 4 + length)]))
                offset += 4 + length
            }
            guard parts.count == 4 else { return false }
            let accepted = k[1] == 1
            // The reasons as the log holds them: each a u8 length and its UTF-8.
            var reasons: [UnsafeRawBufferPointer] = []
            var at = 0
            while at < parts[0].count, reasons.count < Int(k[16]) {
                let length = Int(parts[0][at])
                guard at + 1 + length <= parts[0].count else { return false }
                reasons.append(UnsafeRawBufferPointer(rebasing: parts[0][(at + 1)..<(at + 1 + length)]))
                at += 1 + length
            }
            func has(_ name: String) -> Bool { reasons.contains { $0.elementsEqual(name.utf8) } }
            func append(_ literal: StaticString) { literal.withUTF8Buffer { out.append(contentsOf: $0) } }
            func flag(_ column: CountKey, _ value: Bool) {
                append(column.key)
                out.append(value ? UInt8(ascii: "1") : UInt8(ascii: "0"))
            }
            append(CountKey.day.key)
            out.appendDecimal(Int64(k.loadLE(Int32.self, at: 2)))
            append(CountKey.role.key)
            append(k[0] == 1 ? #""source""# : #""destination""#)
            flag(.accepted, accepted)
            flag(.late, has("late"))
            flag(.verified, has("source_token_verified") || has("destination_token_verified"))
            flag(.hasTokens, false)
            append(CountKey.quarantineReasons.key)
            // The reasons joined by commas, as one string: escaping works byte by byte, so each
            // reason escaped in turn is the joined string escaped.
            out.append(UInt8(ascii: "\""))
            if !accepted {
                for (i, reason) in reasons.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.writeStringContent(utf8: reason, to: &out)
                }
            }
            out.append(UInt8(ascii: "\""))
            append(CountKey.sourceSite.key)
            JSONValue.writeString(utf8: parts[1], to: &out)
            append(CountKey.sourceID.key)
            out.appendDecimal(UInt64(k[14]))
            append(CountKey.campaign.key)
            JSONValue.writeString(utf8: parts[3], to: &out)
            append(CountKey.destination.key)
            JSONValue.writeString(utf8: parts[2], to: &out)
            append(CountKey.triggerData.key)
            out.appendDecimal(UInt64(k[15]))
            append(CountKey.delayBucket.key)
            out.appendDecimal(k.loadLE(Int64.self, at: 6))
            return true
        }
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
                // Copied as they are, so only what needs neither escaping nor UTF-8's checks.
                guard b[j] != UInt8(ascii: "\\"), b[j] >= 0x20, b[j] < 0x80 else { return nil }
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
            key.count == name.utf8CodeUnitCount && name.withUTF8Buffer { n in
                guard let base = b.baseAddress, let expected = n.baseAddress else { return false }
                return memcmp(base + key.lowerBound, expected, key.count) == 0
            }
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
