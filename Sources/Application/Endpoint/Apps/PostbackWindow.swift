import Dispatch
import Locking
import Postbacks
import Primitives
import RecordLog
import SiteOwners

/// `--postback-window-days N`: how long the postback ledger keeps a postback in memory. Devices
/// retry a postback at most nine times over nine days (PROTOCOLS.md §3); once a sealed segment's
/// last record is older than the window, a thread of its own (`postback-window`, once a minute
/// and whenever a manual clock is set) writes the segment's key table and the ledger lets go of
/// its postbacks. A delivery after that is found in the table.
///
/// Memory thus holds the window's postbacks and the day being written, whatever the history.
/// Retention removes a segment only once its table is written (`tabledThrough`), and the table
/// goes with it.
final class PostbackWindow: PeriodicallySwept {
    /// A day past the longest a device retries: a postback stays in memory from 10 to 11 days
    /// (its segment goes once its last record is that old). A later copy is still caught, in the
    /// key table; the margin only saves that lookup.
    static let defaultDays = 10
    let days: Int
    private let store: RecordLog
    let ledger: PostbackLedger
    let archive: PostbackArchive
    private let clock: EndpointClock
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    let thread = PeriodicSweep(named: "postback-window", priority: .background)
    private let failureCount = Locked(0)
    /// One sweep at a time: the thread's, or one asked for by hand.
    private let sweeping = CriticalSection()

    /// Told of each table written (the segment's digest keeps less of it from then on).
    private let onTableWritten: @Sendable (PostbackKeyTable) -> Void

    init(days: Int, store: RecordLog, ledger: PostbackLedger, archive: PostbackArchive, clock: EndpointClock,
         announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void,
         onTableWritten: @escaping @Sendable (PostbackKeyTable) -> Void = { _ in }) {
        self.onTableWritten = onTableWritten
        self.days = days
        self.store = store
        self.ledger = ledger
        self.archive = archive
        self.clock = clock
        self.announce = announce
        clock.whenSet { [thread] in thread.wake() }
    }

    /// Table writes that failed since start (the disk full): the postbacks stay in memory meanwhile.
    var failures: Int { failureCount.withLock { $0 } }

    /// Just after the last sealed segment, counted from the oldest kept, whose postbacks a table
    /// holds: retention may remove segments up to here.
    var tabledThrough: Int {
        let segments = store.segments
        var through = segments.first?.base ?? 0
        for segment in segments where segment.sealed {
            guard archive.hasTable(forSegment: segment.base) else { break }
            through = segment.end
        }
        return through
    }

    /// Writes the table of every sealed segment past the window that has none, oldest first, and
    /// drops the tables of segments retention removed. Returns the tables written.
    @discardableResult
    func sweep() -> [PostbackKeyTable] {
        sweeping.run {
            return sweepOnce()
        }
    }

    private func sweepOnce() -> [PostbackKeyTable] {
        let segments = store.segments
        archive.removeTables(endingBy: segments.first?.base ?? 0)
        if let oldest = archive.tables.first(where: { $0.ids > 0 })?.firstID { ledger.forgetLate(below: oldest) }
        let cutoff = clock.now().millisecondsSinceEpoch - Int64(days) * TimingModel.day
        var written: [PostbackKeyTable] = []
        for segment in segments where segment.sealed && !archive.hasTable(forSegment: segment.base) {
            // A stop waits for one segment, not for every one a first start has to table.
            guard !thread.stopping else { break }
            if let last = segment.lastTime, last.millisecondsSinceEpoch >= cutoff { break }
            do {
                guard let table = try table(of: segment) else { throw PostbackKeyTable.Unreadable(path: "segment \(segment.base) of the log") }
                written.append(table)
                onTableWritten(table)
            } catch {
                failureCount.withLock { $0 += 1 }
                announce("postback_key_table_failed", [("segment", .number(String(segment.base))), ("error", .string("\(error)"))])
                break
            }
        }
        if let last = written.last {
            announce("postback_keys_written", [
                ("segments", .number(String(written.count))), ("postbacks", .number(String(written.reduce(0) { $0 + $1.keys }))),
                ("through_offset", .number(String(last.segmentEnd))), ("keys_in_memory", .number(String(ledger.keysInMemory))),
            ])
        }
        return written
    }

    /// Reads the segment's postbacks, writes their table and hands them to it; nil when the
    /// segment could not be read to its end.
    private func table(of segment: RecordLog.Segment) throws -> PostbackKeyTable? {
        var postbacks: [(id: UInt64, hash: UInt64, start: Int)] = []
        let reached = store.scanRecords(of: .postback, from: segment.base, through: segment.end) { view in
            if let stored = StoredPostback.decode(view) {
                postbacks.append((stored.id, DuplicateKeyHash(stored.draft.duplicateKey).disk, view.start))
            }
            return true
        }
        guard reached >= segment.end else { return nil }
        // A table holds a count for every id from the segment's first postback to its last. A
        // restore begins a segment of its own (`RecordLog.markRestored`), so ids are dense; a
        // segment where they are not is refused here, never sized by its span.
        if let first = postbacks.first?.id, let last = postbacks.last?.id, last - first > UInt64(4 * postbacks.count + 65_536) {
            throw PostbackKeyTable.Unreadable(path: "segment \(segment.base) of the log: its postback ids run from \(first) to \(last), too sparse for a key table")
        }
        let ids = postbacks.first.map { $0.id..<(postbacks[postbacks.count - 1].id + 1) } ?? 0..<0
        let snapshot = ledger.retrySnapshot(of: ids)
        let table = try PostbackKeyTable.write(path: archive.path(segmentBase: segment.base), segmentBase: segment.base,
                                               segmentEnd: segment.end, postbacks: postbacks,
                                               retries: { snapshot.counts[$0] ?? 0 }, retriesThrough: snapshot.through)
        ledger.adopt(table, snapshot: snapshot.counts, through: postbacks.last?.id)
        return table
    }
}
