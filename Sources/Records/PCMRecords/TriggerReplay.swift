import Locking
import Primitives
import RecordLog
import SiteOwners

/// Collects what a start gives the trigger ledger (`ReplayedTriggers`) from the records replay
/// shows it and from the digests of sealed segments: only triggers received from `keepingFrom`
/// on, which a report can still use, and the uses of those, so that a start holds the late-cutoff
/// window and not every trigger ever recorded.
///
/// A segment's digest section: `1 · u64 id · i64 time · u8 trigger data · u8 priority · u8
/// length · site · u8 length · attribution source (empty for none)` per trigger, and `2 · u64
/// trigger id` per report that used one.
public final class TriggerReplay: SegmentDigestOwner {
    private let collected = Locked(Collected())
    private let keepingFrom: Timestamp

    private struct Collected {
        var replayed = ReplayedTriggers()
        /// The first trigger kept: a use of an earlier one is of one let go.
        var firstKept: UInt64?

        mutating func add(_ trigger: Trigger, from cutoff: Timestamp) {
            guard trigger.recordedAt >= cutoff else { return }
            if firstKept == nil { firstKept = trigger.id }
            replayed.triggers.append(trigger)
        }

        mutating func use(_ id: UInt64) {
            guard let firstKept, id >= firstKept else { return }
            replayed.consumed.insert(id)
        }
    }

    public init(keepingFrom: Timestamp) {
        self.keepingFrom = keepingFrom
    }

    public func take(_ record: RecordLog.RecordView) {
        if record.kind == RecordKind.trigger.number, let trigger = StoredTrigger.decode(record) {
            collected.withLock { $0.add(trigger, from: keepingFrom) }
        } else if record.kind == RecordKind.report.number, let used = StoredReport.peekTriggerID(record.payload) {
            collected.withLock { $0.use(used) }
        }
    }

    public var replayed: ReplayedTriggers { collected.withLock { $0.replayed } }

    public var digestName: String { "triggers-1" }

    public func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        var out: [UInt8] = []

        mutating func take(_ record: RecordLog.RecordView) {
            if record.kind == RecordKind.trigger.number, let trigger = StoredTrigger.decode(record) {
                out.append(1)
                out.appendLE(trigger.id)
                out.appendLE(trigger.recordedAt.millisecondsSinceEpoch)
                out.append(trigger.triggerData)
                out.append(trigger.priority)
                for text in [trigger.site, trigger.attributionSource ?? ""] {
                    let utf8 = Array(text.utf8.prefix(255))
                    out.append(UInt8(utf8.count))
                    out.append(contentsOf: utf8)
                }
            } else if record.kind == RecordKind.report.number, let used = StoredReport.peekTriggerID(record.payload) {
                out.append(2)
                out.appendLE(used)
            }
        }

        func finish() -> [UInt8] { out }
    }

    public func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        var triggers: [Trigger] = [], consumed: [UInt64] = []
        var at = 0
        func text() -> String? {
            guard at < bytes.count, at + 1 + Int(bytes[at]) <= bytes.count else { return nil }
            defer { at += 1 + Int(bytes[at]) }
            return String(decoding: bytes[(at + 1)..<(at + 1 + Int(bytes[at]))], as: UTF8.self)
        }
        while at < bytes.count {
            switch bytes[at] {
            case 1 where at + 19 <= bytes.count:
                let id = bytes.loadLE(UInt64.self, at: at + 1), time = bytes.loadLE(Int64.self, at: at + 9)
                let (data, priority) = (bytes[at + 17], bytes[at + 18])
                at += 19
                guard let site = text(), !site.isEmpty, let source = text() else { return nil }
                triggers.append(Trigger(id: id, recordedAt: Timestamp(millisecondsSinceEpoch: time), site: site, triggerData: data,
                                        priority: priority, attributionSource: source.isEmpty ? nil : source))
            case 2 where at + 9 <= bytes.count:
                consumed.append(bytes.loadLE(UInt64.self, at: at + 1))
                at += 9
            default:
                return nil
            }
        }
        return { [collected, keepingFrom, triggers, consumed] in
            collected.withLock { c in
                for trigger in triggers { c.add(trigger, from: keepingFrom) }
                for id in consumed { c.use(id) }
            }
        }
    }
}
