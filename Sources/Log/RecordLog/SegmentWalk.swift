import Foundation

/// Walks the records of a range of the log from one segment into the next, opening each sealed
/// segment as it comes to it (a start holds no descriptor per segment). A segment removed
/// meanwhile (retention) is passed over: its records are gone. Not shared between threads.
struct SegmentWalk {
    private let segments: [SegmentTally]
    private let end: Int
    private var position = 0
    private var scanner: LogScanner?
    private var file: SegmentFile?
    /// Where the walk is: just after the last record it gave, or where it stopped.
    private(set) var offset: Int
    /// The walk stopped because a segment could not be read (not because it ended).
    private(set) var failed = false
    /// Lets the store remove the segments again (they are pinned while the walk may open them).
    private var release: (@Sendable () -> Void)?
    /// Where to begin reading a segment (by its base) whose start a reader knows holds nothing
    /// for it: a record boundary inside the segment.
    var skipTo: [Int: Int] = [:]

    /// `segments`: the store's at the time that hold part of the range, oldest first, pinned
    /// until `finish` calls `release`. `start` is a record boundary; one before the oldest segment
    /// starts at the oldest segment.
    init(segments: [SegmentTally], from start: Int, through end: Int, release: (@Sendable () -> Void)? = nil) {
        self.segments = segments
        self.end = end
        self.release = release
        offset = max(start, segments.first?.layout.base ?? start)
    }

    /// Frees the buffer of the segment being read and unpins the segments; call once done.
    mutating func finish() {
        scanner?.deallocate()
        scanner = nil
        file = nil
        release?()
        release = nil
    }

    /// The next record, seen in place until the next call; nil at the end (or on failure), when
    /// the walk has finished and unpinned its segments.
    mutating func next() -> RecordLog.RecordView? {
        while offset < end {
            if scanner == nil {
                guard openSegment() else { break }
                continue
            }
            guard let step = try? scanner!.step(at: offset) else {
                failed = true
                finish()
                return nil
            }
            switch step {
            case .record(let at, let kind, let tag, let payload, let size, _):
                offset = at + size
                if let view = RecordLog.RecordView(kind: kind, tag: tag, payload: payload, start: at, end: offset) { return view }
            case .corrupt(let at, let length):
                offset = at + length
            case .tornTail, .end:
                // The rest of this segment holds no record: on to the next one.
                offset = max(offset, min(segments[position].end, end))
                position += 1
                scanner?.deallocate()
                scanner = nil
                file = nil
            }
        }
        finish()
        return nil
    }

    /// Opens the segment that holds `offset`, or passes over removed ones; false when done.
    private mutating func openSegment() -> Bool {
        while position < segments.count && segments[position].end <= offset { position += 1 }
        guard position < segments.count else { return false }
        let segment = segments[position]
        offset = max(offset, segment.layout.base, skipTo[segment.layout.base] ?? 0)
        guard offset < segment.end else {
            position += 1
            return true
        }
        let opened: SegmentFile
        do throws(StoreError) {
            if let file = segment.file { opened = file } else { opened = try SegmentFile.openForReading(segment.path) }
        } catch {
            // Gone before the walk began (pinned segments are never removed under it): passed over.
            guard error.errno == ENOENT else {
                failed = true
                return false
            }
            offset = min(segment.end, end)
            position += 1
            return true
        }
        file = opened
        scanner = LogScanner(file: opened.file, layout: segment.layout, end: min(end, segment.end))
        return true
    }
}
