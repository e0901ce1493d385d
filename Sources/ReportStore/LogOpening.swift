import Foundation
import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a data directory's log: finishes a roll a crash interrupted, takes each sealed segment
/// from its index (or reads it), and reads the active segment, cutting a torn tail.
struct LogOpening {
    var replay = LogReplay()
    /// The active segment, open for writing.
    var active: SegmentFile
    var layout: SegmentLayout
    /// The active file's size after replay: where its zeros end.
    var activeSize: Int

    /// `readFrom`: sealed segments that end at or before it are taken from their indexes; records
    /// from it on are read and shown to `visit`.
    init(directory: LogDirectory, readFrom: Int, fingerprintAt: Int?, visit: (ReportStore.RecordView) -> Void) throws {
        try FileManager.default.createDirectory(atPath: directory.sealedDirectory, withIntermediateDirectories: true)
        try directory.recoverInterruptedRoll()
        let shown: (ReportStore.RecordView) -> Void = { record in if record.end > readFrom { visit(record) } }

        for (i, base) in directory.sealedBases().enumerated() {
            let path = directory.sealedPath(base: base)
            let file = try LogFile.open(path: path, create: false)
            defer { file.close() }
            let layout: SegmentLayout
            switch try SegmentHeader.read(file) {
            case .header(let header, let length):
                guard header.base == base else { throw Self.broken(path, "its header says it starts at \(header.base)") }
                if i == 0 { replay.start(at: header, fingerprintAt: fingerprintAt) }
                layout = SegmentLayout(base: base, dataStart: length)
            case .none where base == 0:
                layout = SegmentLayout(base: 0, dataStart: 0)
            case .none, .damaged:
                throw Self.broken(path, "it has no valid segment header")
            }
            guard i == 0 || base == replay.end else {
                throw Self.broken(path, "the log before it ends at \(replay.end): a segment between is missing")
            }
            let size = try file.size()
            let readsFingerprint = fingerprintAt.map { $0 > base } ?? false
            if let index = Self.index(at: directory.indexPath(base: base)), index.layout == layout, index.fileSize == size,
               index.end <= readFrom, !(readsFingerprint && index.end > fingerprintAt!) {
                replay.take(index, path: path, fingerprintAt: fingerprintAt)
            } else {
                try replay.read(file, layout: layout, path: path, active: false, fingerprintAt: fingerprintAt, visit: shown)
                // Best effort: without it the next start reads the segment again.
                if let tally = replay.segments.last {
                    try? LogFile.replaceWhole(path: directory.indexPath(base: base),
                                              with: replay.index(of: tally, fileSize: size).encoded())
                }
            }
        }

        let sealedEnd = replay.segments.isEmpty ? nil : replay.end
        let existed = FileManager.default.fileExists(atPath: directory.activePath)
        let file = try LogFile.open(path: directory.activePath)
        active = SegmentFile(file)
        switch try SegmentHeader.read(file) {
        case .header(let header, let length):
            if let sealedEnd, header.base != sealedEnd || header.prefix != replay.prefix {
                throw Self.broken(directory.activePath, "its header does not continue the sealed segments in log/")
            }
            replay.start(at: header, fingerprintAt: fingerprintAt)
            layout = SegmentLayout(base: header.base, dataStart: length)
        case .none where sealedEnd == nil:
            // The first segment, or a log written before segments: no header.
            layout = SegmentLayout(base: 0, dataStart: 0)
        case .none, .damaged:
            guard sealedEnd != nil, try file.endOfNonZeroBytes(size: try file.size()) == 0 else {
                throw Self.broken(directory.activePath, "it holds data but no valid segment header")
            }
            // A new active segment after sealed ones (the old one was renamed and a crash came
            // before its successor took the name): it starts where they end.
            let header = replay.header()
            let bytes = header.encoded()
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            layout = SegmentLayout(base: header.base, dataStart: bytes.count)
        }
        if !existed { LogFile.syncDirectory(directory.directory) }
        try replay.read(file, layout: layout, path: directory.activePath, active: true, fingerprintAt: fingerprintAt, visit: shown)
        replay.segments[replay.segments.count - 1].file = active
        activeSize = try file.size()
    }

    private static func index(at path: String) -> SegmentIndex? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return SegmentIndex.decode([UInt8](data))
    }

    private static func broken(_ path: String, _ why: String) -> StoreError {
        StoreError(operation: "open the log: \(path): \(why)", errno: EINVAL)
    }
}

extension LogReplay {
    /// The header of a segment that would start where the log ends now.
    func header() -> SegmentHeader {
        var ids: [UInt8: UInt64] = [:]
        for (kind, id) in nextIDs.enumerated() where id > 1 { ids[UInt8(kind)] = id }
        var kept: [UInt8: Int] = [:]
        for (kind, count) in counts.enumerated() where count > 0 { kept[UInt8(kind)] = count }
        return SegmentHeader(base: end, prefix: prefix, lastTime: lastTime, nextIDs: ids, counts: kept)
    }

    /// The index of a segment replay read, for writing beside it.
    func index(of tally: SegmentTally, fileSize: Int) -> SegmentIndex {
        var entries: [(kind: UInt8, time: Int64, offset: Int)] = []
        for (kind, index) in indexes.enumerated() {
            for entry in index where entry.offset >= tally.layout.base && entry.offset < tally.end {
                entries.append((UInt8(kind), entry.time, entry.offset))
            }
        }
        entries.sort { $0.offset < $1.offset }
        var ids: [UInt8: UInt64] = [:]
        for (kind, id) in nextIDs.enumerated() where id > 1 { ids[UInt8(kind)] = id }
        return SegmentIndex(layout: tally.layout, end: tally.end, fileSize: fileSize, prefix: prefix,
                            firstTime: tally.firstTime, lastTime: tally.lastTime, lastTimeThrough: lastTime,
                            nextIDs: ids, counts: tally.counts, entries: entries, corrupt: tally.corrupt)
    }
}
