import PCM
import Primitives
import SiteOwners

/// The log encoding of a `Trigger`. Triggers share the report log (and its single writer), so
/// the order of triggers and reports on disk is the order they were decided in.
///
/// Payload: u64 id, i64 recorded-at milliseconds, u8 trigger data, u8 priority,
/// u8 length + UTF-8 site, u8 length + UTF-8 attribution source (length 0: none).
enum StoredTrigger {
    static func encodePayload(_ trigger: Trigger, into out: inout [UInt8]) {
        out.appendLE(trigger.id)
        out.appendLE(trigger.recordedAt.millisecondsSinceEpoch)
        out.append(trigger.triggerData)
        out.append(trigger.priority)
        for text in [trigger.site, trigger.attributionSource ?? ""] {
            let bytes = text.utf8.prefix(255)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
    }

    static func decodePayload(_ p: UnsafeRawBufferPointer) -> Trigger? {
        guard p.count >= 20 else { return nil }
        var offset = 18
        func text() -> String? {
            guard offset < p.count, offset + 1 + Int(p[offset]) <= p.count else { return nil }
            let length = Int(p[offset])
            defer { offset += 1 + length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)]), as: UTF8.self)
        }
        guard let site = text(), let source = text(), offset == p.count, !site.isEmpty else { return nil }
        return Trigger(id: p.loadLE(UInt64.self, at: 0), recordedAt: Timestamp(millisecondsSinceEpoch: p.loadLE(Int64.self, at: 8)),
                       site: site, triggerData: p[16], priority: p[17], attributionSource: source.isEmpty ? nil : source)
    }
}
