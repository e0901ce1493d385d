import Dispatch
import Locking
import Primitives
import RecordLog
import SiteOwners

/// `--retention-days N`: removes whole sealed log segments whose last record is more than N days
/// old, on a thread of its own (`log-retention`), once a minute and whenever a manual clock is set.
///
/// A segment goes only once nothing needs its records any more:
/// - the summary's checkpoint on disk covers it, so that the summary keeps counting its reports
///   after a restart (a summary still being rebuilt removes nothing);
/// - with `--clickhouse`, every table's export has passed it.
/// What stays true is in docs/DEPLOYMENT.md ("Retention").
final class LogRetention: PeriodicallySwept {
    let days: Int
    private let store: RecordLog
    private let clock: EndpointClock
    /// The log offset below which everything is safe elsewhere: the summary's checkpoint, the export.
    private let keptElsewhereThrough: @Sendable () -> Int
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    let thread = PeriodicSweep(named: "log-retention")
    private let state = Locked<(removed: Int, removedBytes: Int, waiting: Int)>((0, 0, 0))

    init(days: Int, store: RecordLog, clock: EndpointClock, keptElsewhereThrough: @escaping @Sendable () -> Int,
         announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void) {
        self.days = days
        self.store = store
        self.clock = clock
        self.keptElsewhereThrough = keptElsewhereThrough
        self.announce = announce
        clock.whenSet { [thread] in thread.wake() }
    }

    /// Segments removed since start, and their bytes.
    var removed: (segments: Int, bytes: Int) { state.withLock { ($0.removed, $0.removedBytes) } }

    /// Sealed segments old enough to go that the last sweep kept.
    var waiting: Int { state.withLock { $0.waiting } }

    /// Removes what may go now; returns what it removed.
    @discardableResult
    func sweep() -> [RecordLog.Segment] {
        let cutoff = clock.now().millisecondsSinceEpoch - Int64(days) * TimingModel.day
        let safeThrough = keptElsewhereThrough()
        func old(_ segment: RecordLog.Segment) -> Bool {
            guard let last = segment.lastTime else { return segment.end == segment.base }
            return last.millisecondsSinceEpoch < cutoff
        }
        let removed = store.removeSegments { segment in segment.end <= safeThrough && old(segment) }
        let waiting = store.segments.filter { $0.sealed && old($0) }.count
        state.withLock { $0.waiting = waiting }
        guard let newest = removed.last else { return [] }
        let bytes = removed.reduce(0) { $0 + $1.bytes }
        state.withLock { s in
            s.removed += removed.count
            s.removedBytes += bytes
        }
        announce("log_segments_removed", [
            ("segments", .number(String(removed.count))), ("bytes", .number(String(bytes))),
            ("through_offset", .number(String(newest.end))),
            ("records_kept_from", store.oldestRecordTime.map { .string($0.rfc3339) } ?? .null),
            ("retention_days", .number(String(days))),
        ])
        return removed
    }
}

extension RecordLog {
    /// The receive time of the oldest record kept, of any kind; nil in an empty log.
    var oldestRecordTime: Timestamp? { segments.lazy.compactMap(\.firstTime).first }

    /// Whether segments were removed: the log no longer starts at offset 0.
    var hasRemovedSegments: Bool { (segments.first?.base ?? 0) > 0 }
}
