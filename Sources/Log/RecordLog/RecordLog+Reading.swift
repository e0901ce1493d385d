import Foundation
import Locking
import Primitives

/// Reading the log back: counts, scans from an offset, one record by its start, records of a
/// kind in a time range; every read pins the segments it may open against removal.
extension RecordLog {
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

    /// The segments a reader of `[start, end)` may open, pinned against removal until `walk`'s
    /// `finish`.
    func walk(from start: Int, through end: Int, only keep: ((SegmentTally) -> Bool)? = nil) -> SegmentWalk {
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
