import Foundation

/// What the store knows of one kept segment.
struct SegmentTally {
    var layout: SegmentLayout
    var path: String
    /// Just after the last whole record (the active segment's grows with every commit).
    var end: Int
    /// Records of each kind in the segment.
    var counts: [UInt8: Int] = [:]
    var firstTime: Int64?
    var lastTime: Int64?
    var corrupt: [(offset: Int, length: Int)] = []
    /// The active segment's open file; a sealed segment is opened by whoever reads it.
    var file: SegmentFile?

    mutating func count(kind: UInt8, time: Int64) {
        counts[kind, default: 0] += 1
        if firstTime == nil { firstTime = time }
        lastTime = time
    }
}

/// What reading the log at open finds: where the data ends, the damage, the time index, the ids
/// to continue from and the log's fingerprints. Sealed segments with a valid index are taken from
/// it; the others are read, and every record read is shown to the owner's `visit` on the way (the
/// endpoint rebuilds its ledgers from them).
struct LogReplay {
    /// Just after the last whole record: where the next commit writes.
    var end = 0
    /// Records of each kind, by the kind's number.
    var counts = [Int](repeating: 0, count: 256)
    /// Each kind's time index: one entry every `RecordLog.indexStride` records of the kind.
    var indexes = [[(time: Int64, offset: Int)]](repeating: [], count: 256)
    var tornTailBytes = 0
    /// The next id of each kind (each kind counts its own).
    var nextIDs = [UInt64](repeating: 1, count: 256)
    var lastTime: Int64 = 0
    /// Every record, folded.
    var prefix = LogPrefix.empty
    /// The prefix at the offset asked for, if a record ends exactly there.
    var fingerprinted: LogPrefix?
    /// Records read rather than taken from an index.
    var recordsRead = 0
    var segments: [SegmentTally] = []

    var corrupt: [(offset: Int, length: Int)] { segments.flatMap(\.corrupt) }

    /// Continues from what a segment's header says the log held before it. The oldest kept
    /// segment's header is all that is left of the segments removed before it: its counts and
    /// fingerprint are taken. After a segment read here, the fingerprint folded so far is kept
    /// instead, damage included, so that state derived from the log before the damage (the
    /// summary's checkpoint) no longer matches it and is rebuilt.
    mutating func start(at header: SegmentHeader, fingerprintAt: Int?) {
        if segments.isEmpty {
            for (kind, count) in header.counts { counts[Int(kind)] = count }
            prefix = header.prefix
        }
        end = header.base
        lastTime = max(lastTime, header.lastTime)
        for (kind, id) in header.nextIDs { nextIDs[Int(kind)] = max(nextIDs[Int(kind)], id) }
        if fingerprintAt == header.base { fingerprinted = prefix }
    }

    /// Takes a sealed segment from its index, without reading it.
    mutating func take(_ index: SegmentIndex, path: String, fingerprintAt: Int?) {
        for entry in index.entries { indexes[Int(entry.kind)].append((entry.time, entry.offset)) }
        for (kind, count) in index.counts { counts[Int(kind)] += count }
        for (kind, id) in index.nextIDs { nextIDs[Int(kind)] = max(nextIDs[Int(kind)], id) }
        lastTime = max(lastTime, index.lastTimeThrough)
        prefix = index.prefix
        end = index.end
        if fingerprintAt == end { fingerprinted = prefix }
        segments.append(SegmentTally(layout: index.layout, path: path, end: index.end, counts: index.counts,
                                     firstTime: index.firstTime, lastTime: index.lastTime, corrupt: index.corrupt))
    }

    /// Reads one segment from its first record. In the active segment a torn tail is cut off the
    /// file (and flushed); in a sealed one, which is never written again, it is reported as damage.
    mutating func read(_ file: LogFile, layout: SegmentLayout, path: String, active: Bool, fingerprintAt: Int?,
                       visit: (RecordLog.RecordView) -> Void) throws(StoreError) {
        let size = try file.size()
        // Zeros after the last record are free space: preallocated, or blocks a crash kept from
        // being written (never acknowledged ones: those were flushed). The scan stops a little
        // past the last non-zero byte, where any record that ends in zero bytes is still whole.
        let zerosFrom = try file.endOfNonZeroBytes(size: size)
        // A sealed segment was cut to its last record when it was sealed: all of it is data, and
        // the next segment begins where it ends, whatever damage is in it.
        let dataEnd = layout.base + max(0, size - layout.dataStart)
        let logEnd = active ? layout.base + max(0, min(size, zerosFrom + LogRecord.headerSize + LogRecord.maxPayload) - layout.dataStart) : dataEnd
        var scanner = LogScanner(file: file, layout: layout, end: logEnd)
        defer { scanner.deallocate() }
        var tally = SegmentTally(layout: layout, path: path, end: layout.base)
        if fingerprintAt == layout.base { fingerprinted = prefix }
        var offset = layout.base
        scan: while true {
            switch try scanner.step(at: offset) {
            case .record(let at, let kind, let tag, let payload, let size, let checksum):
                prefix.fold(checksum: checksum, size: size, end: at + size)
                if prefix.end == fingerprintAt { fingerprinted = prefix }
                if let record = RecordLog.RecordView(kind: kind, tag: tag, payload: payload, start: at, end: at + size) {
                    take(record, at: at)
                    tally.count(kind: kind, time: record.time.millisecondsSinceEpoch)
                    visit(record)
                }
                recordsRead += 1
                offset = at + size
            case .corrupt(let at, let length):
                tally.corrupt.append((at, length))
                offset = at + length
            case .tornTail(let at):
                guard active else {
                    tally.corrupt.append((at, dataEnd - at))
                    offset = dataEnd
                    break scan
                }
                offset = at
                let fileAt = layout.fileOffset(at)
                guard fileAt < zerosFrom else { break scan }
                tornTailBytes = size - fileAt
                try file.truncate(to: fileAt)
                try file.sync()
                break scan
            case .end:
                break scan
            }
        }
        end = offset
        tally.end = offset
        segments.append(tally)
    }

    private mutating func take(_ record: RecordLog.RecordView, at offset: Int) {
        let time = record.time.millisecondsSinceEpoch
        let kind = Int(record.kind)
        if counts[kind] % RecordLog.indexStride == 0 { indexes[kind].append((time, offset)) }
        counts[kind] += 1
        if record.id < UInt64.max { nextIDs[kind] = max(nextIDs[kind], record.id + 1) }
        lastTime = max(lastTime, time)
    }
}
