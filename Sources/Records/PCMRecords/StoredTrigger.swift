import RecordLog
import SiteOwners

/// The log encoding of a `Trigger`. Triggers share the report log (and its single writer), so
/// the order of triggers and reports on disk is the order they were decided in.
///
/// Payload, after the store's id and time (the trigger's id and recorded-at): u8 trigger data,
/// u8 priority, u8 length + UTF-8 site, u8 length + UTF-8 attribution source (length 0: none).
enum StoredTrigger {
    static func encodePayload(site: String, triggerData: UInt8, priority: UInt8, attributionSource: String?,
                              into out: inout [UInt8]) {
        out.append(triggerData)
        out.append(priority)
        for text in [site, attributionSource ?? ""] {
            let bytes = text.utf8.prefix(255)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
    }

    static func decode(_ record: RecordLog.RecordView) -> Trigger? {
        let p = record.payload
        guard p.count >= 4 else { return nil }
        var offset = 2
        func text() -> String? {
            guard offset < p.count, offset + 1 + Int(p[offset]) <= p.count else { return nil }
            let length = Int(p[offset])
            defer { offset += 1 + length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)]), as: UTF8.self)
        }
        guard let site = text(), let source = text(), offset == p.count, !site.isEmpty else { return nil }
        return Trigger(id: record.id, recordedAt: record.time, site: site, triggerData: p[0], priority: p[1],
                       attributionSource: source.isEmpty ? nil : source)
    }
}
