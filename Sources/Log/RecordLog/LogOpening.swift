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
    init(directory: LogDirectory, readFrom: Int, fingerprintAt: Int?, visit: (RecordLog.RecordView) -> Void) throws {
        try directory.recoverInterruptedRoll()
        let shown: (RecordLog.RecordView) -> Void = { record in if record.end > readFrom { visit(record) } }
        let bases = try directory.sealedBases()
        let expectedStart = try directory.start()

        for (i, base) in bases.enumerated() {
            let path = directory.sealedPath(base: base)
            let file = try LogFile.open(path: path, create: false, readOnly: true)
            defer { file.close() }
            let layout: SegmentLayout
            switch try SegmentHeader.read(file) {
            case .header(let header, let length):
                guard header.base == base else { throw Self.broken(path, "its header says it starts at \(header.base)") }
                if i == 0 { try Self.check(start: base, expected: expectedStart, directory) }
                replay.start(at: header, fingerprintAt: fingerprintAt)
                layout = SegmentLayout(base: base, dataStart: length)
            case .none where base == 0:
                layout = SegmentLayout(base: 0, dataStart: 0)
            case .none, .damaged:
                throw Self.broken(path, "it has no valid segment header")
            }
            guard i == 0 || base == replay.end else {
                throw Self.broken(path, "the segment before it ends at \(replay.end): a segment between is missing")
            }
            let size = try file.size()
            let index = Self.index(at: directory.indexPath(base: base), layout: layout, fileSize: size)
            let readsFingerprint = fingerprintAt.map { $0 > base && $0 < layout.base + size - layout.dataStart } ?? false
            if let index, index.end <= readFrom, !readsFingerprint {
                replay.take(index, path: path, fingerprintAt: fingerprintAt)
            } else {
                try replay.read(file, layout: layout, path: path, active: false, fingerprintAt: fingerprintAt, visit: shown)
                // Best effort, and only where there was none: without it the next start reads the segment again.
                if index == nil, let tally = replay.segments.last {
                    try? LogFile.replaceWhole(path: directory.indexPath(base: base), with: replay.index(of: tally, fileSize: size).encoded())
                }
            }
        }

        let sealedEnd = replay.segments.isEmpty ? nil : replay.end
        let existed = FileManager.default.fileExists(atPath: directory.activePath)
        let file = try LogFile.open(path: directory.activePath)
        active = SegmentFile(file)
        switch try SegmentHeader.read(file) {
        case .header(let header, let length):
            if let sealedEnd, header.base != sealedEnd {
                throw Self.broken(directory.activePath, "it starts at \(header.base), but the sealed segments in log/ end at \(sealedEnd)")
            }
            if sealedEnd == nil { try Self.check(start: header.base, expected: expectedStart, directory) }
            replay.start(at: header, fingerprintAt: fingerprintAt)
            layout = SegmentLayout(base: header.base, dataStart: length)
        case .none where sealedEnd == nil:
            // The first segment, or a log written before segments: no header.
            try Self.check(start: 0, expected: expectedStart, directory)
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

    /// The log must begin where retention last left it (`log/START`), or earlier: beginning later
    /// means segments were lost, not removed.
    private static func check(start: Int, expected: Int, _ directory: LogDirectory) throws {
        guard start > expected else { return }
        throw broken(directory.directory, "the log begins at offset \(start), but \(expected == 0 ? "nothing was ever removed" : "retention removed only what came before \(expected)"): segments are missing from \(directory.sealedDirectory) (a restore without log/?). Restore them; if they were removed on purpose, write \(start) into \(directory.startPath)")
    }

    /// The index beside a sealed segment, if it is whole and describes this very file.
    private static func index(at path: String, layout: SegmentLayout, fileSize: Int) -> SegmentIndex? {
        guard let data = FileManager.default.contents(atPath: path), let index = SegmentIndex.decode([UInt8](data)),
              index.layout == layout, index.fileSize == fileSize, index.end == layout.base + fileSize - layout.dataStart else { return nil }
        var previous = layout.base
        for entry in index.entries {
            guard entry.offset >= previous, entry.offset < index.end else { return nil }
            previous = entry.offset
        }
        return index
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
