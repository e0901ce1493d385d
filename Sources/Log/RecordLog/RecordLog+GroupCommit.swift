import Foundation
import Locking
import Primitives

/// Queueing and group commit: records queued from any thread, written and flushed together by
/// one committer at a time, each told once it is on disk.
extension RecordLog {
    struct Queue {
        var pending: PendingBatch
        var stopping = false
    }

    struct Committing {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        var writer: Writer
    }


    struct PendingBatch {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        /// The next id of each kind (each kind counts its own).
        var nextIDs: [UInt64]
        var lastTime: Int64
    }

    /// A queued record: where its bytes start in the batch, and whom to tell once it is on disk.
    struct Entry {
        var kind: UInt8
        var at: Int
        var id: UInt64
        var time: Int64
        var callback: Callback
    }

    /// Whom a queued record tells: a completion, once, or an owner that follows its steps.
    enum Callback {
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

    func enqueue(kind: RecordKind, tag: UInt8, callback: Callback,
                                  payload: (inout [UInt8]) -> Void) -> (id: UInt64, time: Timestamp)? {
        let (queued, first, id, time) = queue.withLock { q -> (Bool, Bool, UInt64, Int64) in
            guard !q.stopping else { return (false, false, 0, 0) }
            let id = max(q.pending.nextIDs[Int(kind.number)], idFloor)
            q.pending.nextIDs[Int(kind.number)] = id + 1
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

    func writerLoop() {
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

    func commit(bytes: [UInt8], entries: [Entry], to writer: inout Writer, overlappingFlush: Bool) {
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

    func appended(_ entry: Entry, batch bytes: [UInt8], at start: Int) -> AppendedRecord {
        let length = bytes.withUnsafeBytes { Int($0.loadLE(UInt32.self, at: entry.at + 4)) }
        return AppendedRecord(id: entry.id, time: Timestamp(millisecondsSinceEpoch: entry.time), recordStart: start + entry.at,
                              recordEnd: start + entry.at + LogRecord.headerSize + length)
    }

}
