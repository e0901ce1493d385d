import Foundation
import Locking
import Primitives

/// The durable home of every record: one append-only, checksummed log, one writer at a time,
/// kept in segments (`LogSegment`): the active one written, the sealed ones removable whole.
///
/// A record says what it is (its kind, `RecordKind`, which its owner declares) and which protocol
/// it is of (its tag), and carries the id and receive time the store gives it; the rest is its
/// owner's payload, which the store keeps and hands back but never reads (`PCMRecords` encodes
/// PCM's, `Postbacks` the postbacks'). Every kind is counted and time-indexed alike.
///
/// `append` queues a record and returns at once; a commit takes everything queued, writes it with
/// one `pwrite`, flushes it to the medium with one `fdatasync`, and only then calls each record's
/// completion. Records queued together so share one flush (group commit), and nothing is
/// acknowledged before it is on disk. Who commits is the `Committer` chosen at open.
///
/// An owner may instead follow a record's steps (`append(kind:tag:steps:payload:)`), to prepare
/// work once the record is `written` that must not take effect until it is `stored`:
/// `commitQueued(overlappingFlush: true)` tells them `written` while the batch's flush is still in
/// flight (`BackgroundFlush`), then `stored` or `failed`.
public final class RecordLog: Sendable {
    public let directory: String
    /// The active segment's file.
    public let logPath: String
    /// What replay found when the store opened.
    public let replay: ReplaySummary
    /// The restores the log has been through (`LogRestore`): no id below the last one's floor is
    /// given from then on.
    public let restores: [LogRestore]
    let idFloor: UInt64

    let files: LogDirectory
    let policy: SegmentPolicy
    /// Bytes of zeros to keep written ahead of the data in the active segment (0: none).
    let preallocation: Int
    /// The flush thread of an owner-committed store, for `commitQueued(overlappingFlush: true)`.
    let backgroundFlush: BackgroundFlush?
    /// Writes sealed segments' indexes, so that a roll does not wait for them.
    let indexWriter = DispatchQueue(label: "record-log-index", qos: .utility)
    /// Held by `removeSegments`, so that two removals never interleave.
    let removing = CriticalSection()
    let clock: @Sendable () -> Timestamp
    let committer: Committer
    /// What is queued for the next commit; held only to queue or to take a batch, never across I/O.
    let queue: Locked<Queue>
    /// Wakes the writer thread (`.writerThread` only) when a batch starts or the store closes.
    let wake = DispatchSemaphore(value: 0)
    /// The batch being committed, swapped with the queue's so neither buffer is copied, and the
    /// active segment it goes to. Its lock is held for a whole commit, so commits never overlap:
    /// the log has one writer at a time.
    let committing: Locked<Committing>
    let stopped = DispatchGroup()
    let state: Locked<DurableState>

    /// One index entry every this many records of a kind: enough to start an export near `since`
    /// without keeping every record's position in memory.
    static let indexStride = 1024

    /// Told once the record is on disk (with the id and time it got), or could not be written.
    public typealias RecordCompletion = @Sendable (Result<AppendedRecord, StoreError>) -> Void
    /// Told each step of the record's way to disk, in order: `written`, then `stored`; or `failed`
    /// (after `written` or without it).
    public typealias RecordSteps = @Sendable (RecordStep) -> Void

    public enum RecordStep {
        /// The record's bytes are in the file, perhaps not yet on the medium: prepare, but hold
        /// whatever would tell anyone it is kept.
        case written(AppendedRecord)
        /// On the medium.
        case stored(AppendedRecord)
        /// Not kept: it could not be written or flushed.
        case failed(StoreError)
    }

    /// What the store gave a record: its id (counted per kind), its time, and where it ends.
    public struct AppendedRecord: Sendable {
        public var id: UInt64
        public var time: Timestamp
        /// Where it begins in the log: what `record(startingAt:_:)` reads it back from.
        public var recordStart: Int
        public var recordEnd: Int
    }

    /// The bytes every payload starts with, the store's own: u64 id, i64 time in milliseconds.
    static let envelopeSize = 16

    /// Who writes queued records to disk.
    public enum Committer: Sendable {
        /// A thread of the store's own, woken by the first record of each batch: for owners that
        /// queue from any thread and never call `commitQueued()`.
        case writerThread
        /// The owner calls `commitQueued()` once it has queued what it has at hand. The endpoint's
        /// event loop does so at the end of every turn: the turn's reports share one flush and are
        /// answered in that same turn, without waking another thread and waiting for it to be
        /// scheduled (docs/PERFORMANCE.md has the measurements that chose this).
        case owner
    }

    /// What is on disk, as of the last successful flush.
    struct DurableState {
        var end: Int
        /// Records of each kind on disk, by the kind's number.
        var counts: [Int]
        /// Each kind's time index.
        var indexes: [[(time: Int64, offset: Int)]]
        /// Every record on disk, folded: what derived state checks itself against.
        var prefix: LogPrefix
        /// The next id of each kind on disk, and the last time: what a new segment's header says.
        var nextIDs: [UInt64]
        var lastTime: Int64
        /// Every kept segment, oldest first; the last is the active one.
        var segments: [SegmentTally]
        var lastError: StoreError?
        var flushes: Int
        var rollFailures = 0
        /// Segments handed to record cursors (each cursor counts the segments it may open).
        var segmentsRead = 0
        var lastRollError: String?
        /// Segments a reader may still open, by base, with how many readers: retention waits.
        var pinned: [Int: Int] = [:]
    }

    /// Opens (or creates) the log in `directory` and replays it.
    /// `preallocation`: bytes of zeros to keep written ahead of the data (0: none), so that a
    /// commit overwrites blocks already on disk instead of growing the file (`LogPreallocator`).
    /// `segments`: when the active segment is sealed and a new one begun.
    /// `fingerprintAt`: an offset whose `LogPrefix` replay should note (`ReplaySummary.prefixAtFingerprint`),
    /// so that state derived from the log up to there can be checked against it.
    /// `replayFrom`: `replaying` is called with every record that ends after this offset, in
    /// order, so that the owner can rebuild what it keeps in memory; sealed segments before it are
    /// not read at all, unless one has no index or holds `fingerprintAt` (read, not shown).
    public init(directory: String, committer: Committer = .writerThread, preallocation: Int = 0,
                segments policy: SegmentPolicy = SegmentPolicy(), fingerprintAt: Int? = nil,
                clock: (@Sendable () -> Timestamp)? = nil, replayFrom: Int = 0,
                replaying visit: (RecordView) -> Void = { _ in }) throws {
        self.directory = directory
        self.committer = committer
        self.policy = policy
        self.preallocation = preallocation
        files = LogDirectory(directory: directory)
        self.logPath = files.activePath
        // Without the owner's clock, the system's: receive times are the store's to give.
        self.clock = clock ?? { Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])

        let started = Date()
        restores = try files.restores()
        idFloor = restores.map(\.floor).max() ?? 0
        let opened = try LogOpening(directory: files, readFrom: replayFrom, fingerprintAt: fingerprintAt, visit: visit)
        try FileManager.default.createDirectory(atPath: files.sealedDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let found = opened.replay
        let layout = opened.layout
        // Free space is kept only when more zeros would be written anyway.
        var zeroedEnd = opened.activeSize
        if zeroedEnd > layout.fileOffset(found.end) && preallocation == 0 {
            try opened.active.file.truncate(to: layout.fileOffset(found.end))
            try opened.active.file.sync()
            zeroedEnd = layout.fileOffset(found.end)
        }
        queue = Locked(Queue(pending: PendingBatch(nextIDs: found.nextIDs, lastTime: found.lastTime)))
        state = Locked(DurableState(end: found.end, counts: found.counts, indexes: found.indexes, prefix: found.prefix,
                                    nextIDs: found.nextIDs, lastTime: found.lastTime, segments: found.segments,
                                    lastError: nil, flushes: 0))
        replay = ReplaySummary(records: found.segments.reduce(0) { $0 + $1.counts.values.reduce(0, +) }, counts: found.counts, corruptRecords: found.corrupt,
                               tornTailBytes: found.tornTailBytes, seconds: Date().timeIntervalSince(started),
                               prefixAtFingerprint: found.fingerprinted, recordsRead: found.recordsRead,
                               start: found.segments.first?.layout.base ?? 0)
        let preallocator = preallocation > 0
            ? LogPreallocator(file: opened.active.file, window: preallocation, dataEnd: layout.fileOffset(found.end), zeroedEnd: zeroedEnd) : nil
        committing = Locked(Committing(writer: Writer(segment: opened.active, layout: layout, preallocator: preallocator)))
        backgroundFlush = committer == .owner ? BackgroundFlush() : nil

        guard committer == .writerThread else { return }
        stopped.startThread(named: "record-log-writer") { [self] in writerLoop() }
    }

    /// Finishes every queued write and stops the writer. Appends after this fail.
    public func close() {
        let alreadyClosing = queue.withLock { q in
            defer { q.stopping = true }
            return q.stopping
        }
        wake.signal()
        if committer == .owner { commitQueued() }
        stopped.wait()
        if !alreadyClosing {
            backgroundFlush?.stop()
            committing.withLock { c in
                c.writer.preallocator?.stop()
                c.writer.preallocator = nil
                c.writer.segment = nil
            }
            state.withLock { s in
                if !s.segments.isEmpty { s.segments[s.segments.count - 1].file = nil }
            }
            indexWriter.sync {}
        }
    }
}

