import Foundation
import Locking
import Primitives

/// The segment catalog as `/metrics` and retention see it, and retention itself: sealed segments
/// removed whole, oldest first.
extension RecordLog {
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

        public init(base: Int, end: Int, bytes: Int, records: Int, firstTime: Timestamp?, lastTime: Timestamp?, sealed: Bool) {
            (self.base, self.end, self.bytes, self.records) = (base, end, bytes, records)
            (self.firstTime, self.lastTime, self.sealed) = (firstTime, lastTime, sealed)
        }
    }

    /// Every kept segment, oldest first; the last is the active one.
    public var segments: [Segment] { state.withLock { Self.segments(of: $0) } }

    static func segments(of s: DurableState) -> [Segment] {
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

}
