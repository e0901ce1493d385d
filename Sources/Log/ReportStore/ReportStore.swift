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
public final class ReportStore: Sendable {
    public let directory: String
    /// The active segment's file.
    public let logPath: String
    /// What replay found when the store opened.
    public let replay: ReplaySummary

    private let files: LogDirectory
    private let policy: SegmentPolicy
    /// Bytes of zeros to keep written ahead of the data in the active segment (0: none).
    private let preallocation: Int
    /// The flush thread of an owner-committed store, for `commitQueued(overlappingFlush: true)`.
    private let backgroundFlush: BackgroundFlush?
    /// Writes sealed segments' indexes, so that a roll does not wait for them.
    private let indexWriter = DispatchQueue(label: "report-store-index", qos: .utility)
    /// Held by `removeSegments`, so that two removals never interleave.
    private let removing = CriticalSection()
    private let clock: @Sendable () -> Timestamp
    private let committer: Committer
    /// What is queued for the next commit; held only to queue or to take a batch, never across I/O.
    private let queue: Locked<Queue>
    /// Wakes the writer thread (`.writerThread` only) when a batch starts or the store closes.
    private let wake = DispatchSemaphore(value: 0)
    /// The batch being committed, swapped with the queue's so neither buffer is copied, and the
    /// active segment it goes to. Its lock is held for a whole commit, so commits never overlap:
    /// the log has one writer at a time.
    private let committing: Locked<Committing>
    private let stopped = DispatchGroup()
    private let state: Locked<DurableState>

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

    /// A record as replay and scans see it. `payload` is the owner's bytes, valid during the call.
    public struct RecordView {
        public var kind: UInt8
        public var tag: UInt8
        public var id: UInt64
        public var time: Timestamp
        public var payload: UnsafeRawBufferPointer
        /// Where the record begins in the log: what `record(startingAt:_:)` reads it back from.
        public var start: Int
        public var end: Int

        /// A record as an owner kept it elsewhere (a segment's digest), to be read by the same
        /// decoder as the log's.
        public init(kind: UInt8, tag: UInt8, id: UInt64, time: Timestamp, payload: UnsafeRawBufferPointer, start: Int, end: Int) {
            self.kind = kind
            self.tag = tag
            self.id = id
            self.time = time
            self.payload = payload
            self.start = start
            self.end = end
        }
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

    private struct Queue {
        var pending: PendingBatch
        var stopping = false
    }

    private struct Committing {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        var writer: Writer
    }

    /// The active segment, as the committing thread writes it.
    private struct Writer {
        var segment: SegmentFile?
        var layout: SegmentLayout
        /// Keeps zeros written ahead of the data, when the store was opened with a preallocation.
        var preallocator: LogPreallocator?
        /// After a roll failed (disk full), the active segment takes batches until then.
        var noRollUntil: UInt64 = 0
        /// Failed rolls in a row, for the pause before the next try.
        var rollFailures = 0
        /// The successor is written under `reports.log.next`: its rename is still to be made.
        var renamePending = false
    }

    private struct PendingBatch {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        /// The next id of each kind (each kind counts its own).
        var nextIDs: [UInt64]
        var lastTime: Int64
    }

    /// A queued record: where its bytes start in the batch, and whom to tell once it is on disk.
    private struct Entry {
        var kind: UInt8
        var at: Int
        var id: UInt64
        var time: Int64
        var callback: Callback
    }

    /// Whom a queued record tells: a completion, once, or an owner that follows its steps.
    private enum Callback {
        case completion(RecordCompletion)
        case steps(RecordSteps)

        var followsSteps: Bool {
            if case .steps = self { return true }
            return false
        }

        func written(_ record: AppendedRecord) {
            if case .steps(let steps) = self { steps(.written(record)) }
        }

        func stored(_ record: AppendedRecord) {
            switch self {
            case .completion(let completion): completion(.success(record))
            case .steps(let steps): steps(.stored(record))
            }
        }

        func failed(_ error: StoreError) {
            switch self {
            case .completion(let completion): completion(.failure(error))
            case .steps(let steps): steps(.failed(error))
            }
        }
    }

    /// What is on disk, as of the last successful flush.
    private struct DurableState {
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

    public struct ReplaySummary: Sendable {
        /// Whole records in the kept segments, of every kind.
        public var records: Int
        /// Of each kind, by the kind's number.
        let counts: [Int]
        /// Offsets and lengths of damaged records that were skipped.
        public var corruptRecords: [(offset: Int, length: Int)]
        /// Bytes of an incomplete last record that were cut off.
        public var tornTailBytes: Int
        public var seconds: Double
        /// The log's first `fingerprintAt` bytes (the `init` argument) as replay found them, or
        /// nil if no record ends exactly there.
        public var prefixAtFingerprint: LogPrefix?
        /// Records read from the segments; the others were taken from sealed segments' indexes.
        public var recordsRead: Int
        /// Where the oldest kept segment starts: what the log held before it was removed.
        public var start: Int

        /// Whole records of `kind` found.
        public func count(of kind: RecordKind) -> Int { counts[Int(kind.number)] }
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
        stopped.startThread(named: "report-store-writer") { [self] in writerLoop() }
    }

    // MARK: - Writing

    /// Queues a record of `kind` for `tag`'s owner: the store writes its id and time, then `payload`
    /// writes the owner's bytes in place. `completion` runs on the committing thread once the record
    /// is on disk, or could not be written.
    /// Returns the record's id, known before it is on disk (a later record in the same batch may
    /// name it), or nil when the store is closing.
    @discardableResult
    public func append(kind: RecordKind, tag: UInt8, completion: @escaping RecordCompletion,
                       payload: (inout [UInt8]) -> Void) -> UInt64? {
        enqueue(kind: kind, tag: tag, callback: .completion(completion), payload: payload)?.id
    }

    /// As `append(kind:tag:completion:payload:)`, but `steps` is told each step on the committing
    /// thread: `written` once the record is in the file (after its flush, or, under
    /// `commitQueued(overlappingFlush: true)`, while the flush is still in flight), then `stored`
    /// or `failed`. What `written` prepares must not take effect before `stored` (the endpoint
    /// prepares a report's answer there, which its event loop holds until the turn ends).
    @discardableResult
    public func append(kind: RecordKind, tag: UInt8, steps: @escaping RecordSteps,
                       payload: (inout [UInt8]) -> Void) -> UInt64? {
        enqueue(kind: kind, tag: tag, callback: .steps(steps), payload: payload)?.id
    }

    /// As `append(kind:tag:steps:payload:)`, returning the record's receive time too (known
    /// before it is on disk).
    public func appendWithTime(kind: RecordKind, tag: UInt8, steps: @escaping RecordSteps,
                               payload: (inout [UInt8]) -> Void) -> (id: UInt64, time: Timestamp)? {
        enqueue(kind: kind, tag: tag, callback: .steps(steps), payload: payload)
    }

    private func enqueue(kind: RecordKind, tag: UInt8, callback: Callback,
                                  payload: (inout [UInt8]) -> Void) -> (id: UInt64, time: Timestamp)? {
        let (queued, first, id, time) = queue.withLock { q -> (Bool, Bool, UInt64, Int64) in
            guard !q.stopping else { return (false, false, 0, 0) }
            let id = q.pending.nextIDs[Int(kind.number)]
            q.pending.nextIDs[Int(kind.number)] += 1
            // Receive times never go backwards in the log, so `since` can binary-search the index.
            let time = max(clock().millisecondsSinceEpoch, q.pending.lastTime)
            q.pending.lastTime = time
            let at = q.pending.bytes.count
            LogRecord.append(kind: kind, tag: tag, to: &q.pending.bytes) { out in
                out.appendLE(id)
                out.appendLE(time)
                payload(&out)
            }
            q.pending.entries.append(Entry(kind: kind.number, at: at, id: id, time: time, callback: callback))
            return (true, q.pending.entries.count == 1, id, time)
        }
        guard queued else {
            callback.failed(StoreError(operation: "append after close", errno: ESHUTDOWN))
            return nil
        }
        if first && committer == .writerThread { wake.signal() }
        return (id, Timestamp(millisecondsSinceEpoch: time))
    }

    /// Whether records are waiting for the next commit.
    public var hasQueued: Bool { queue.withLock { !$0.pending.entries.isEmpty } }

    /// Writes and flushes everything queued, on the calling thread, and calls the completions;
    /// again if those queued more (a pipelined request answered by a completion), until nothing is
    /// left. Completions must not call this themselves.
    /// `overlappingFlush`: tell records that follow their steps `written` while each batch's flush
    /// is in flight, on an owner-committed store; the caller holds their effects until this returns.
    public func commitQueued(overlappingFlush: Bool = false) {
        committing.withLock { batch in
            while true {
                let empty = queue.withLock { q -> Bool in
                    guard !q.pending.entries.isEmpty else { return true }
                    swap(&q.pending.bytes, &batch.bytes)
                    swap(&q.pending.entries, &batch.entries)
                    return false
                }
                if empty { return }
                commit(bytes: batch.bytes, entries: batch.entries, to: &batch.writer, overlappingFlush: overlappingFlush)
                batch.bytes.removeAll(keepingCapacity: true)
                batch.entries.removeAll(keepingCapacity: true)
            }
        }
    }

    private func writerLoop() {
        while true {
            let (empty, stopping) = queue.withLock { ($0.pending.entries.isEmpty, $0.stopping) }
            if empty {
                if stopping { return }
                wake.wait()
                continue
            }
            commitQueued()
        }
    }

    private func commit(bytes: [UInt8], entries: [Entry], to writer: inout Writer, overlappingFlush: Bool) {
        let start = state.withLock { $0.end }
        if let first = entries.first, needsRoll(&writer, end: start, adding: bytes.count, firstTime: first.time) {
            roll(&writer, at: start)
        }
        guard let segment = writer.segment else {
            for entry in entries { entry.callback.failed(StoreError(operation: "append after close", errno: ESHUTDOWN)) }
            return
        }
        let file = segment.file
        let fileStart = writer.layout.fileOffset(start)
        writer.preallocator?.claim(fileStart..<fileStart + bytes.count)
        var failure: StoreError?
        var wroteEarly = false
        do {
            try file.write(bytes, at: fileStart)
            if overlappingFlush, let backgroundFlush, entries.contains(where: { $0.callback.followsSteps }) {
                backgroundFlush.begin(file)
                for entry in entries {
                    entry.callback.written(appended(entry, batch: bytes, at: start))
                }
                wroteEarly = true
                failure = backgroundFlush.finish()
            } else {
                try file.sync()
            }
        } catch {
            failure = error
        }
        if let error = failure {
            // Cut back whatever part of the batch reached the file, so a half-written record can
            // never be replayed as a report that was refused. The next batch writes here again.
            try? file.truncate(to: fileStart)
            writer.preallocator?.cutBack(to: fileStart)
            state.withLock {
                $0.lastError = error
            }
            for entry in entries { entry.callback.failed(error) }
            return
        }
        state.withLock { s in
            let active = s.segments.count - 1
            for entry in entries {
                let kind = Int(entry.kind)
                if s.counts[kind] % Self.indexStride == 0 { s.indexes[kind].append((entry.time, start + entry.at)) }
                s.counts[kind] += 1
                s.segments[active].count(kind: entry.kind, time: entry.time)
                s.nextIDs[kind] = max(s.nextIDs[kind], entry.id &+ 1)
                s.lastTime = max(s.lastTime, entry.time)
            }
            s.end = start + bytes.count
            s.segments[active].end = s.end
            s.prefix.fold(records: bytes, at: start)
            s.lastError = nil
            s.flushes += 1
        }
        for entry in entries {
            let record = appended(entry, batch: bytes, at: start)
            if !wroteEarly { entry.callback.written(record) }
            entry.callback.stored(record)
        }
    }

    /// Whether the batch about to be written starts a new segment: the active one has records,
    /// and the batch would take it past its size, or begins a UTC day its first record did not.
    /// Never while a roll's last rename is still to be made, nor during a failed roll's pause.
    private func needsRoll(_ writer: inout Writer, end: Int, adding size: Int, firstTime: Int64) -> Bool {
        if writer.renamePending {
            guard rename(files.nextPath, files.activePath) == 0 else { return false }
            LogFile.syncDirectory(directory)
            writer.renamePending = false
            state.withLock { s in s.segments[s.segments.count - 1].path = files.activePath }
        }
        guard end > writer.layout.base, DispatchTime.now().uptimeNanoseconds >= writer.noRollUntil else { return false }
        if end - writer.layout.base + size > policy.maxBytes { return true }
        guard policy.rollsDaily, let segmentFirst = state.withLock({ $0.segments.last?.firstTime }) else { return false }
        return SegmentPolicy.day(of: firstTime) != SegmentPolicy.day(of: segmentFirst)
    }

    /// Seals the active segment, which ends at `end`, and begins its successor there:
    /// 1. the successor is made as `reports.log.next`, exclusively (a file of that name left by
    ///    anything else is never reused), with its header, flushed;
    /// 2. the zeros kept ahead of the old segment are cut, so that it ends with its last record;
    /// 3. `reports.log` is renamed into `log/`, then the successor to `reports.log` (should that
    ///    last rename fail, the successor is written under its temporary name and the rename is
    ///    tried again before each batch; a start finishes it too);
    /// 4. the sealed segment's index is written off the committing thread (a start without it
    ///    reads the segment instead).
    /// A roll that fails before step 3 leaves the active segment as it was, taking batches, and is
    /// tried again after a pause that doubles up to five minutes (`rollFailures` counts them).
    private func roll(_ writer: inout Writer, at end: Int) {
        guard let old = writer.segment else { return }
        let (tally, header, sealed) = state.withLock { s -> (SegmentTally, SegmentHeader, SegmentIndex) in
            var replay = LogReplay()
            replay.end = s.end
            replay.prefix = s.prefix
            replay.nextIDs = s.nextIDs
            replay.lastTime = s.lastTime
            replay.indexes = s.indexes
            replay.counts = s.counts
            let tally = s.segments[s.segments.count - 1]
            return (tally, replay.header(), replay.index(of: tally, fileSize: writer.layout.fileOffset(end)))
        }
        let base = tally.layout.base
        let successor: LogFile
        let headerBytes = header.encoded()
        do {
            try FileManager.default.createDirectory(atPath: files.sealedDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            successor = try LogFile.open(path: files.nextPath, exclusive: true)
        } catch {
            return rollFailed(&writer, error)
        }
        do {
            try successor.write(headerBytes, at: 0)
            try successor.sync()
            writer.preallocator?.stop()
            writer.preallocator = nil
            try old.file.truncate(to: writer.layout.fileOffset(end))
            try old.file.sync()
            guard rename(files.activePath, files.sealedPath(base: base)) == 0 else {
                throw StoreError(operation: "rename \(files.activePath)", errno: errno)
            }
        } catch {
            // This attempt made the successor and nothing took its place: it goes.
            successor.close()
            _ = unlink(files.nextPath)
            startPreallocator(&writer, dataEnd: end)
            return rollFailed(&writer, error)
        }
        writer.renamePending = rename(files.nextPath, files.activePath) != 0
        LogFile.syncDirectory(files.sealedDirectory)
        LogFile.syncDirectory(directory)
        let segment = SegmentFile(successor)
        let layout = SegmentLayout(base: end, dataStart: headerBytes.count)
        let activePath = writer.renamePending ? files.nextPath : files.activePath
        state.withLock { s in
            let active = s.segments.count - 1
            s.segments[active].file = nil
            s.segments[active].path = files.sealedPath(base: base)
            s.segments.append(SegmentTally(layout: layout, path: activePath, end: end, file: segment))
        }
        writer.segment = segment
        writer.layout = layout
        writer.rollFailures = 0
        startPreallocator(&writer, dataEnd: end)
        let (indexPath, bytes) = (files.indexPath(base: base), sealed.encoded())
        indexWriter.async { try? LogFile.replaceWhole(path: indexPath, with: bytes) }
    }

    private func startPreallocator(_ writer: inout Writer, dataEnd end: Int) {
        guard preallocation > 0, writer.preallocator == nil, let segment = writer.segment else { return }
        let dataEnd = writer.layout.fileOffset(end)
        writer.preallocator = LogPreallocator(file: segment.file, window: preallocation, dataEnd: dataEnd,
                                              zeroedEnd: (try? segment.file.size()) ?? dataEnd)
    }

    private func rollFailed(_ writer: inout Writer, _ error: any Error) {
        writer.rollFailures += 1
        let pause = min(UInt64(300), UInt64(1) << UInt64(min(writer.rollFailures - 1, 9)))
        writer.noRollUntil = DispatchTime.now().uptimeNanoseconds + pause * 1_000_000_000
        let text = "\(error)"
        state.withLock { s in
            s.rollFailures += 1
            s.lastRollError = text
        }
    }

    private func appended(_ entry: Entry, batch bytes: [UInt8], at start: Int) -> AppendedRecord {
        let length = bytes.withUnsafeBytes { Int($0.loadLE(UInt32.self, at: entry.at + 4)) }
        return AppendedRecord(id: entry.id, time: Timestamp(millisecondsSinceEpoch: entry.time), recordStart: start + entry.at,
                              recordEnd: start + entry.at + LogRecord.headerSize + length)
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

    // MARK: - Reading

    /// Records of `kind` the log has held, those in removed segments included (the export's lag
    /// is this less what it sent); `segments` has what is kept.
    public func count(of kind: RecordKind) -> Int { state.withLock { $0.counts[Int(kind.number)] } }

    /// The last write error, until a later write succeeds: the store is refusing reports.
    public var writeError: StoreError? { state.withLock { $0.lastError } }

    /// Successful write-and-flush rounds; with group commit, fewer than reports stored.
    public var flushes: Int { state.withLock { $0.flushes } }

    /// Segments handed to record cursors (`records(of:since:until:skipping:)`: the exports) since
    /// the store opened; the scans of the store's owners (digests, rebuilds) are not counted.
    public var segmentsRead: Int { state.withLock { $0.segmentsRead } }

    public var bytesOnDisk: Int { state.withLock { $0.end } }

    /// Everything on disk as of the last flush: record a derived state's prefix with this, at a
    /// moment when that state has taken in exactly the records flushed so far.
    public var durablePrefix: LogPrefix { state.withLock { $0.prefix } }

    /// Calls `visit` with every record of `kind` in the log from offset `start` (a record boundary)
    /// up to `end`, in order; stops early when `visit` returns false. For rebuilding derived state
    /// (the summary) on a thread of its own while the endpoint already serves: reads with `pread`,
    /// never writes.
    /// Returns the offset it read up to: `end`, unless `visit` stopped it or the file could not
    /// be read there (a caller that moves a cursor must not move it past that).
    @discardableResult
    public func scanRecords(of kind: RecordKind, from start: Int = 0, through end: Int, _ visit: (RecordView) -> Bool) -> Int {
        var walk = walk(from: start, through: end)
        defer { walk.finish() }
        while let view = walk.next() {
            guard view.kind == kind.number else { continue }
            if !visit(view) { return walk.offset }
        }
        return walk.offset
    }

    /// As `scanRecords(of:from:through:_:)`, for records of any of `kinds`, in the order they
    /// were written: for an owner whose kinds tell one story (a token, then its calls).
    @discardableResult
    public func scanRecords(ofAny kinds: [RecordKind], from start: Int = 0, through end: Int, _ visit: (RecordView) -> Bool) -> Int {
        var wanted = [Bool](repeating: false, count: 256)
        for kind in kinds { wanted[Int(kind.number)] = true }
        var walk = walk(from: start, through: end)
        defer { walk.finish() }
        while let view = walk.next() {
            guard wanted[Int(view.kind)] else { continue }
            if !visit(view) { return walk.offset }
        }
        return walk.offset
    }

    /// The record that begins at `start` (a `RecordView.start`), seen in place by `read`; nil when
    /// no whole record begins there (its segment removed, or damaged). For an owner that keeps
    /// where its records are (the postback key tables) and reads one back now and then.
    public func record<T>(startingAt start: Int, _ read: (RecordView) -> T?) -> T? {
        let end = state.withLock { $0.end }
        guard start >= 0, start < end else { return nil }
        var walk = walk(from: start, through: end)
        defer { walk.finish() }
        guard let view = walk.next(), view.start == start else { return nil }
        return read(view)
    }

    /// Calls `visit` with every record from `start` up to `end`, of every kind (a segment's
    /// digest); as `scanRecords(of:from:through:_:)` otherwise.
    @discardableResult
    public func scanEveryRecord(from start: Int = 0, through end: Int, _ visit: (RecordView) -> Bool) -> Int {
        var walk = walk(from: start, through: end)
        defer { walk.finish() }
        while let view = walk.next() {
            if !visit(view) { return walk.offset }
        }
        return walk.offset
    }

    /// The bases of the sealed segments in `directory`'s log, oldest first, from their names
    /// alone: what a start checks segment digests against before it opens the log.
    public static func sealedSegmentBases(directory: String) -> [Int] {
        (try? LogDirectory(directory: directory).sealedBases()) ?? []
    }

    /// The records of `kind` received in `[since, until)`, oldest first, read lazily from disk.
    /// A segment that holds no record of `kind` is never opened; `skipping`, given a segment's
    /// base, may say up to where it holds nothing for this reader (its end: the whole segment; a
    /// record boundary inside it: the start of it), so that a reader that knows what segments
    /// hold (`SegmentSites`) reads less.
    public func records(of kind: RecordKind, since: Timestamp? = nil, until: Timestamp? = nil,
                        skipping: ((_ segmentBase: Int) -> Int?)? = nil) -> RecordCursor {
        let (end, startOffset) = state.withLock { s -> (Int, Int) in
            guard let since else { return (s.end, 0) }
            // The last index entry strictly before `since`: every record from `since` on is after it.
            let index = s.indexes[Int(kind.number)]
            var low = 0, high = index.count
            while low < high {
                let mid = (low + high) / 2
                if index[mid].time < since.millisecondsSinceEpoch { low = mid + 1 } else { high = mid }
            }
            return (s.end, low == 0 ? 0 : index[low - 1].offset)
        }
        var skipTo: [Int: Int] = [:]
        let holding: (SegmentTally) -> Bool = { segment in
            guard segment.counts[kind.number, default: 0] > 0 else { return false }
            guard let through = skipping?(segment.layout.base), through > segment.layout.base else { return true }
            if through >= segment.end { return false }
            skipTo[segment.layout.base] = through
            return true
        }
        var walk = walk(from: startOffset, through: end, only: holding)
        walk.skipTo = skipTo
        return RecordCursor(walk: walk, kind: kind, since: since, until: until)
    }

    // MARK: - Segments

    /// A kept segment, as `/metrics` and retention see it.
    public struct Segment: Sendable, Equatable {
        /// The log offsets of its first record and just after its last.
        public var base: Int
        public var end: Int
        /// Bytes in its file (the active one's without the zeros kept ahead).
        public var bytes: Int
        public var records: Int
        /// Receive times of its first and last record; nil without records.
        public var firstTime: Timestamp?
        public var lastTime: Timestamp?
        /// Only the active segment is written; sealed ones can be removed.
        public var sealed: Bool
    }

    /// Every kept segment, oldest first; the last is the active one.
    public var segments: [Segment] { state.withLock { Self.segments(of: $0) } }

    private static func segments(of s: DurableState) -> [Segment] {
        s.segments.enumerated().map { i, tally in
            Segment(base: tally.layout.base, end: tally.end, bytes: tally.layout.fileOffset(tally.end),
                    records: tally.counts.values.reduce(0, +),
                    firstTime: tally.firstTime.map(Timestamp.init(millisecondsSinceEpoch:)),
                    lastTime: tally.lastTime.map(Timestamp.init(millisecondsSinceEpoch:)),
                    sealed: i < s.segments.count - 1)
        }
    }

    /// Removes sealed segments, oldest first, for as long as `remove` says yes; never the active
    /// one, one a reader may still open (`SegmentWalk` pins them), or one after a segment kept.
    /// Their records are gone from every read; offsets do not move. `remove` is asked under the
    /// store's lock: it must not call the store. Returns the segments removed.
    ///
    /// `log/START` says first where the log will begin; then the files go, oldest first, stopping at
    /// the first that cannot be unlinked (the rest stay, and are kept); only then does the store
    /// forget them.
    @discardableResult
    public func removeSegments(while remove: (Segment) -> Bool) -> [Segment] {
        removing.run {
            let chosen = state.withLock { s -> [(Segment, String)] in
                var chosen: [(Segment, String)] = []
                for (segment, tally) in zip(Self.segments(of: s), s.segments) where segment.sealed {
                    guard s.pinned[segment.base] == nil, remove(segment) else { break }
                    chosen.append((segment, tally.path))
                }
                return chosen
            }
            guard let last = chosen.last else { return [] }
            do { try files.setStart(last.0.end) } catch { return [] }
            var removed: [Segment] = []
            for (segment, path) in chosen {
                guard unlink(path) == 0 || errno == ENOENT else { break }
                _ = unlink(files.indexPath(base: segment.base))
                removed.append(segment)
            }
            LogFile.syncDirectory(files.sealedDirectory)
            guard let through = removed.last?.end else { return [] }
            state.withLock { s in
                s.segments.removeFirst(removed.count)
                for kind in s.indexes.indices where !s.indexes[kind].isEmpty {
                    s.indexes[kind].removeAll { $0.offset < through }
                }
            }
            return removed
        }
    }

    /// Failed rolls since the store opened, and the last one's error: the active segment goes on
    /// growing meanwhile.
    public var rollFailures: (count: Int, lastError: String?) { state.withLock { ($0.rollFailures, $0.lastRollError) } }

    /// The segments a reader of `[start, end)` may open, pinned against removal until `walk`'s
    /// `finish`.
    private func walk(from start: Int, through end: Int, only keep: ((SegmentTally) -> Bool)? = nil) -> SegmentWalk {
        let segments = state.withLock { s -> [SegmentTally] in
            let wanted = s.segments.filter { $0.end > start && $0.layout.base < end && (keep?($0) ?? true) }
            for segment in wanted { s.pinned[segment.layout.base, default: 0] += 1 }
            if keep != nil { s.segmentsRead += wanted.count }
            return wanted
        }
        let bases = segments.map(\.layout.base)
        return SegmentWalk(segments: segments, from: start, through: end) { [state] in
            state.withLock { s in
                for base in bases {
                    s.pinned[base, default: 1] -= 1
                    if s.pinned[base] == 0 { s.pinned[base] = nil }
                }
            }
        }
    }
}

extension ReportStore.RecordView {
    /// The view of a record's payload; nil if it is too short to hold the store's envelope.
    init?(kind: UInt8, tag: UInt8, payload: UnsafeRawBufferPointer, start: Int = 0, end: Int) {
        guard payload.count >= ReportStore.envelopeSize else { return nil }
        self.init(kind: kind, tag: tag, id: payload.loadLE(UInt64.self, at: 0),
                  time: Timestamp(millisecondsSinceEpoch: payload.loadLE(Int64.self, at: 8)),
                  payload: UnsafeRawBufferPointer(rebasing: payload[ReportStore.envelopeSize...]), start: start, end: end)
    }
}

/// Reads the records of one kind one at a time. Not shared between threads.
public final class RecordCursor: @unchecked Sendable {
    private var walk: SegmentWalk
    private let kind: UInt8
    private let since: Timestamp?
    private let until: Timestamp?
    private var finished = false

    init(walk: SegmentWalk, kind: RecordKind, since: Timestamp?, until: Timestamp?) {
        self.walk = walk
        self.kind = kind.number
        self.since = since
        self.until = until
    }

    deinit { walk.finish() }

    /// The next record in range that `decode` makes something of (it sees the record in place,
    /// nothing copied), or nil at the end.
    public func next<T>(_ decode: (ReportStore.RecordView) -> T?) -> T? {
        while !finished {
            guard let view = walk.next() else {
                finished = true
                return nil
            }
            guard view.kind == kind else { continue }
            if let since, view.time < since { continue }
            if let until, view.time >= until {
                finished = true
                return nil
            }
            if let value = decode(view) { return value }
        }
        return nil
    }
}
