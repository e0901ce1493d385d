import Foundation

/// What reading the whole log at open finds: where the data ends, the damage, the time index,
/// the ids to continue from and the log's fingerprints; every record is shown to the owner's
/// `visit` on the way (the endpoint rebuilds its trigger ledger from them).
struct LogReplay {
    /// Just after the last whole record: where the next commit writes.
    var end = 0
    /// Records of each kind, by the kind's number.
    var counts = [Int](repeating: 0, count: 256)
    /// Each kind's time index: one entry every `ReportStore.indexStride` records of the kind.
    var indexes = [[(time: Int64, offset: Int)]](repeating: [], count: 256)
    var corrupt: [(offset: Int, length: Int)] = []
    var tornTailBytes = 0
    /// The highest id of each kind (each kind counts its own).
    var lastIDs = [UInt64](repeating: 0, count: 256)
    var lastTime: Int64 = 0
    /// Every record, folded.
    var prefix = LogPrefix.empty
    /// The prefix at the offset asked for, if a record ends exactly there.
    var fingerprinted: LogPrefix?

    /// Reads `file` from the start; a torn tail is cut off the file (and flushed) on the way.
    init(file: LogFile, fingerprintAt: Int?, visit: (ReportStore.RecordView) -> Void) throws(StoreError) {
        let size = try file.size()
        // Zeros after the last record are free space: preallocated, or blocks a crash kept from
        // being written (never acknowledged ones: those were flushed). The scan stops a little
        // past the last non-zero byte, where any record that ends in zero bytes is still whole.
        let zerosFrom = try file.endOfNonZeroBytes(size: size)
        var scanner = LogScanner(file: file, end: min(size, zerosFrom + LogRecord.headerSize + LogRecord.maxPayload))
        defer { scanner.deallocate() }
        if fingerprintAt == 0 { fingerprinted = prefix }
        var offset = 0
        scan: while true {
            switch try scanner.step(at: offset) {
            case .record(let at, let kind, let tag, let payload, let size, let checksum):
                prefix.fold(checksum: checksum, size: size, end: at + size)
                if prefix.end == fingerprintAt { fingerprinted = prefix }
                if let record = ReportStore.RecordView(kind: kind, tag: tag, payload: payload, end: at + size) {
                    take(record, at: at)
                    visit(record)
                }
                offset = at + size
            case .corrupt(let at, let length):
                corrupt.append((at, length))
                offset = at + length
            case .tornTail(let at):
                offset = at
                if at < zerosFrom {
                    tornTailBytes = size - at
                    try file.truncate(to: at)
                    try file.sync()
                }
                break scan
            case .end:
                break scan
            }
        }
        end = offset
    }

    private mutating func take(_ record: ReportStore.RecordView, at offset: Int) {
        let time = record.time.millisecondsSinceEpoch
        let kind = Int(record.kind)
        if counts[kind] % ReportStore.indexStride == 0 { indexes[kind].append((time, offset)) }
        counts[kind] += 1
        lastIDs[Int(record.kind)] = max(lastIDs[Int(record.kind)], record.id)
        lastTime = max(lastTime, time)
    }
}
