import Primitives

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
    public func next<T>(_ decode: (RecordLog.RecordView) -> T?) -> T? {
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
