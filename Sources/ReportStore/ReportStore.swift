import PCM
import Primitives
import SiteOwners
import Foundation
import Locking

/// The durable home of every report: one append-only, checksummed log file, one writer at a time.
///
/// `append` queues a report and returns at once; a commit takes everything queued, writes it with
/// one `pwrite`, flushes it to the medium with one `fdatasync`, and only then calls each report's
/// completion. Reports queued together so share one flush (group commit), and nothing is
/// acknowledged before it is on disk. Who commits is the `Committer` chosen at open.
public final class ReportStore: Sendable {
    public let directory: String
    public let logPath: String
    /// What replay found when the store opened.
    public let replay: ReplaySummary

    private let file: LogFile
    /// Keeps zeros written ahead of the data, when the store was opened with a preallocation.
    private let preallocator: LogPreallocator?
    private let clock: @Sendable () -> Timestamp
    private let committer: Committer
    /// What is queued for the next commit; held only to queue or to take a batch, never across I/O.
    private let queue: Locked<Queue>
    /// Wakes the writer thread (`.writerThread` only) when a batch starts or the store closes.
    private let wake = DispatchSemaphore(value: 0)
    /// The batch being committed, swapped with the queue's so neither buffer is copied. Its lock
    /// is held for a whole commit, so commits never overlap: the log has one writer at a time.
    private let committing = Locked<(bytes: [UInt8], entries: [Entry])>(([], []))
    private let stopped = DispatchGroup()
    private let state: Locked<DurableState>

    /// One index entry every this many records: enough to start an export near `since` without
    /// keeping every record's position in memory.
    static let indexStride = 1024

    public typealias Completion = @Sendable (Result<StoredReport, StoreError>) -> Void
    public typealias TriggerCompletion = @Sendable (Result<Trigger, StoreError>) -> Void

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

    private struct PendingBatch {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        var nextID: UInt64
        var nextTriggerID: UInt64
        var lastTime: Int64
    }

    /// A queued record: where its bytes start in the batch, and whom to tell once it is on disk.
    private enum Entry {
        case report(StoredReport, at: Int, Completion)
        case trigger(Trigger, TriggerCompletion)
    }

    /// The triggers replay found, and the ids of those a stored report already used.
    public struct ReplayedTriggers: Sendable {
        public var triggers: [Trigger] = []
        public var consumed: Set<UInt64> = []
    }
    private let replayedTriggers: Locked<ReplayedTriggers?>

    /// What is on disk, as of the last successful flush.
    private struct DurableState {
        var end: Int
        var count: Int
        var index: [(time: Int64, offset: Int)]
        /// Every record on disk, folded: what derived state checks itself against.
        var prefix: LogPrefix
        var lastError: StoreError?
        var flushes: Int
    }

    public struct ReplaySummary: Sendable {
        public var records: Int
        /// Offsets and lengths of damaged records that were skipped.
        public var corruptRecords: [(offset: Int, length: Int)]
        /// Bytes of an incomplete last record that were cut off.
        public var tornTailBytes: Int
        public var seconds: Double
        /// The log's first `fingerprintAt` bytes (the `init` argument) as replay found them, or
        /// nil if no record ends exactly there.
        public var prefixAtFingerprint: LogPrefix?
    }

    /// Opens (or creates) `directory/reports.log` and replays it.
    /// `preallocation`: bytes of zeros to keep written ahead of the data (0: none), so that a
    /// commit overwrites blocks already on disk instead of growing the file (`LogPreallocator`).
    /// `fingerprintAt`: an offset whose `LogPrefix` replay should note (`ReplaySummary.prefixAtFingerprint`),
    /// so that state derived from the log up to there can be checked against it.
    public init(directory: String, committer: Committer = .writerThread, preallocation: Int = 0,
                fingerprintAt: Int? = nil, clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) throws {
        self.directory = directory
        self.committer = committer
        self.logPath = directory + "/reports.log"
        self.clock = clock
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let existed = FileManager.default.fileExists(atPath: logPath)
        file = try LogFile.open(path: logPath)
        if !existed { LogFile.syncDirectory(directory) }

        let started = Date()
        let found = try LogReplay(file: file, fingerprintAt: fingerprintAt)
        // Free space is kept only when more zeros would be written anyway.
        var zeroedEnd = try file.size()
        if zeroedEnd > found.end && preallocation == 0 {
            try file.truncate(to: found.end)
            try file.sync()
            zeroedEnd = found.end
        }
        queue = Locked(Queue(pending: PendingBatch(nextID: found.lastID + 1, nextTriggerID: found.lastTriggerID + 1,
                                                   lastTime: found.lastTime)))
        replayedTriggers = Locked(found.triggers)
        state = Locked(DurableState(end: found.end, count: found.reports, index: found.index, prefix: found.prefix,
                                    lastError: nil, flushes: 0))
        replay = ReplaySummary(records: found.reports, corruptRecords: found.corrupt, tornTailBytes: found.tornTailBytes,
                               seconds: Date().timeIntervalSince(started), prefixAtFingerprint: found.fingerprinted)
        preallocator = preallocation > 0
            ? LogPreallocator(file: file, window: preallocation, dataEnd: found.end, zeroedEnd: zeroedEnd) : nil

        guard committer == .writerThread else { return }
        stopped.startThread(named: "report-store-writer") { [self] in writerLoop() }
    }

    // MARK: - Writing

    /// Queues a report. `completion` runs on the committing thread once the report is on disk
    /// (with its id and receive time) or could not be written.
    public func append(_ draft: StoredReport.Draft, completion: @escaping Completion) {
        let (queued, first) = queue.withLock { q -> (Bool, Bool) in
            guard !q.stopping else { return (false, false) }
            let id = q.pending.nextID
            q.pending.nextID += 1
            // Receive times never go backwards in the log, so `since` can binary-search the index.
            let time = max(clock().millisecondsSinceEpoch, q.pending.lastTime)
            q.pending.lastTime = time
            let report = StoredReport(id: id, receivedAt: Timestamp(millisecondsSinceEpoch: time), protocol: draft.protocol, role: draft.role,
                                      verdict: draft.verdict, reasons: draft.reasons, body: draft.body,
                                      triggerID: draft.triggerID, campaign: draft.campaign, triggerRecordedAt: draft.triggerRecordedAt)
            let at = q.pending.bytes.count
            LogRecord.append(kind: .report, tag: draft.protocol.rawValue, to: &q.pending.bytes) {
                StoredReport.encodePayload(draft, id: id, receivedAt: report.receivedAt, into: &$0)
            }
            q.pending.entries.append(.report(report, at: at, completion))
            return (true, q.pending.entries.count == 1)
        }
        guard queued else { return completion(.failure(StoreError(operation: "append after close", errno: ESHUTDOWN))) }
        if first && committer == .writerThread { wake.signal() }
    }

    /// Queues a conversion trigger for the ledger; the store gives it an id and the time.
    /// `completion` runs on the committing thread once it is on disk or could not be written.
    public func appendTrigger(site: String, triggerData: UInt8, priority: UInt8, attributionSource: String?,
                              completion: @escaping TriggerCompletion) {
        let (queued, first) = queue.withLock { q -> (Bool, Bool) in
            guard !q.stopping else { return (false, false) }
            let time = max(clock().millisecondsSinceEpoch, q.pending.lastTime)
            q.pending.lastTime = time
            let trigger = Trigger(id: q.pending.nextTriggerID, recordedAt: Timestamp(millisecondsSinceEpoch: time), site: site,
                                  triggerData: triggerData, priority: priority, attributionSource: attributionSource)
            q.pending.nextTriggerID += 1
            LogRecord.append(kind: .trigger, tag: AttributionProtocol.pcm.rawValue, to: &q.pending.bytes) {
                StoredTrigger.encodePayload(trigger, into: &$0)
            }
            q.pending.entries.append(.trigger(trigger, completion))
            return (true, q.pending.entries.count == 1)
        }
        guard queued else { return completion(.failure(StoreError(operation: "append after close", errno: ESHUTDOWN))) }
        if first && committer == .writerThread { wake.signal() }
    }

    /// What replay found for the trigger ledger; handed out once, then forgotten here.
    public func takeReplayedTriggers() -> ReplayedTriggers {
        replayedTriggers.withLock { taken in
            defer { taken = nil }
            return taken ?? ReplayedTriggers()
        }
    }

    /// Writes and flushes everything queued, on the calling thread, and calls the completions;
    /// again if those queued more (a pipelined request answered by a completion), until nothing is
    /// left. Completions must not call this themselves.
    public func commitQueued() {
        committing.withLock { batch in
            while true {
                let empty = queue.withLock { q -> Bool in
                    guard !q.pending.entries.isEmpty else { return true }
                    swap(&q.pending.bytes, &batch.bytes)
                    swap(&q.pending.entries, &batch.entries)
                    return false
                }
                if empty { return }
                commit(bytes: batch.bytes, entries: batch.entries)
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

    private func commit(bytes: [UInt8], entries: [Entry]) {
        let start = state.withLock { $0.end }
        preallocator?.claim(start..<start + bytes.count)
        do {
            try file.write(bytes, at: start)
            try file.sync()
        } catch {
            // Cut back whatever part of the batch reached the file, so a half-written record can
            // never be replayed as a report that was refused. The next batch writes here again.
            try? file.truncate(to: start)
            preallocator?.cutBack(to: start)
            state.withLock {
                $0.lastError = error
            }
            for entry in entries {
                switch entry {
                case .report(_, _, let completion): completion(.failure(error))
                case .trigger(_, let completion): completion(.failure(error))
                }
            }
            return
        }
        state.withLock { s in
            for case .report(let report, let at, _) in entries {
                if s.count % Self.indexStride == 0 { s.index.append((report.receivedAt.millisecondsSinceEpoch, start + at)) }
                s.count += 1
            }
            s.end = start + bytes.count
            s.prefix.fold(records: bytes, at: start)
            s.lastError = nil
            s.flushes += 1
        }
        for entry in entries {
            switch entry {
            case .report(var report, let at, let completion):
                report.recordEnd = start + at + LogRecord.headerSize + StoredReport.payloadLength(at: at, in: bytes)
                completion(.success(report))
            case .trigger(let trigger, let completion): completion(.success(trigger))
            }
        }
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
            preallocator?.stop()
            file.close()
        }
    }

    // MARK: - Reading

    /// Number of reports on disk.
    public var count: Int { state.withLock { $0.count } }

    /// The last write error, until a later write succeeds: the store is refusing reports.
    public var writeError: StoreError? { state.withLock { $0.lastError } }

    /// Successful write-and-flush rounds; with group commit, fewer than reports stored.
    public var flushes: Int { state.withLock { $0.flushes } }

    public var bytesOnDisk: Int { state.withLock { $0.end } }

    /// Everything on disk as of the last flush: record a derived state's prefix with this, at a
    /// moment when that state has taken in exactly the records flushed so far.
    public var durablePrefix: LogPrefix { state.withLock { $0.prefix } }

    /// Calls `visit` with every report in the log from offset `start` (a record boundary) up to `end`, in order, bodies included;
    /// stops early when `visit` returns false. For rebuilding derived state (the summary) on a
    /// thread of its own while the endpoint already serves: reads with `pread`, never writes.
    public func scanReports(from start: Int = 0, through end: Int, _ visit: (StoredReport) -> Bool) {
        var scanner = LogScanner(file: file, end: end)
        defer { scanner.deallocate() }
        var strings = InternedStrings()
        var offset = start
        while let step = try? scanner.step(at: offset) {
            switch step {
            case .record(let at, let kind, let tag, let payload, let size, _):
                offset = at + size
                guard kind == LogRecord.Kind.report.rawValue,
                      var report = StoredReport.decodePayload(payload, tag: tag, strings: &strings) else { continue }
                report.recordEnd = offset
                if !visit(report) { return }
            case .corrupt(let at, let length):
                offset = at + length
            case .tornTail, .end:
                return
            }
        }
    }

    /// Reports received in `[since, until)`, oldest first, read lazily from disk.
    public func reports(since: Timestamp? = nil, until: Timestamp? = nil) -> ReportCursor {
        let (end, startOffset) = state.withLock { s -> (Int, Int) in
            guard let since else { return (s.end, 0) }
            // The last index entry strictly before `since`: every record from `since` on is after it.
            var low = 0, high = s.index.count
            while low < high {
                let mid = (low + high) / 2
                if s.index[mid].time < since.millisecondsSinceEpoch { low = mid + 1 } else { high = mid }
            }
            return (s.end, low == 0 ? 0 : s.index[low - 1].offset)
        }
        return ReportCursor(file: file, start: startOffset, end: end, since: since, until: until)
    }
}


extension Timestamp {
    public static func now() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }
}

/// Reads stored reports one at a time. Not shared between threads.
public final class ReportCursor: @unchecked Sendable {
    private var scanner: LogScanner
    private var offset: Int
    private let since: Timestamp?
    private let until: Timestamp?
    private var finished = false

    init(file: LogFile, start: Int, end: Int, since: Timestamp?, until: Timestamp?) {
        scanner = LogScanner(file: file, end: end)
        offset = start
        self.since = since
        self.until = until
    }

    deinit { scanner.deallocate() }

    /// The next report in range, or nil at the end.
    public func next() -> StoredReport? {
        while !finished {
            guard let step = try? scanner.step(at: offset) else { finished = true; return nil }
            switch step {
            case .record(let at, let kind, let tag, let payload, let size, _):
                offset = at + size
                guard kind == LogRecord.Kind.report.rawValue, let report = StoredReport.decodePayload(payload, tag: tag) else { continue }
                if let since, report.receivedAt < since { continue }
                if let until, report.receivedAt >= until { finished = true; return nil }
                return report
            case .corrupt(let at, let length):
                offset = at + length
            case .tornTail, .end:
                finished = true
            }
        }
        return nil
    }
}
