import Primitives

/// What a segment holds, as replay would find it: written beside a segment when it is sealed
/// (`log/<base>.index`), so that a start takes a sealed segment's counts, time index and
/// fingerprint from a few kilobytes instead of reading it. An index that does not match its
/// segment's file (size, checksum, version) is ignored and the segment read instead.
struct SegmentIndex: Equatable {
    static let magic = Array("ATTRIDX1".utf8)

    var layout: SegmentLayout
    /// Just after the last record: the next segment's base.
    var end: Int
    /// The segment file's size once sealed (trailing zeros cut).
    var fileSize: Int
    /// The log's fingerprint at `end`.
    var prefix: LogPrefix
    /// Receive times of the first and last record, in ms; nil in a segment without records.
    var firstTime: Int64?
    var lastTime: Int64?
    /// The last receive time of the log up to `end` (for a segment without records, the one before).
    var lastTimeThrough: Int64
    /// The next id of every kind after this segment.
    var nextIDs: [UInt8: UInt64]
    /// Records of each kind in this segment.
    var counts: [UInt8: Int]
    /// This segment's part of each kind's time index: (kind, time, offset), in log order.
    var entries: [(kind: UInt8, time: Int64, offset: Int)]
    /// Damaged records replay skipped.
    var corrupt: [(offset: Int, length: Int)]

    static func == (a: SegmentIndex, b: SegmentIndex) -> Bool { a.encoded() == b.encoded() }

    func encoded() -> [UInt8] {
        var out = Self.magic
        out.appendLE(UInt64(layout.base))
        out.appendLE(UInt32(layout.dataStart))
        out.appendLE(UInt64(end))
        out.appendLE(UInt64(fileSize))
        out.appendLE(UInt64(prefix.records))
        out.appendLE(prefix.digest)
        out.append(firstTime == nil ? 0 : 1)
        out.appendLE(firstTime ?? 0)
        out.appendLE(lastTime ?? 0)
        out.appendLE(lastTimeThrough)
        out.appendLE(UInt16(nextIDs.count))
        for kind in nextIDs.keys.sorted() {
            out.append(kind)
            out.appendLE(nextIDs[kind] ?? 0)
        }
        out.appendLE(UInt16(counts.count))
        for kind in counts.keys.sorted() {
            out.append(kind)
            out.appendLE(UInt64(counts[kind] ?? 0))
        }
        out.appendLE(UInt32(entries.count))
        for entry in entries {
            out.append(entry.kind)
            out.appendLE(entry.time)
            out.appendLE(UInt64(entry.offset))
        }
        out.appendLE(UInt32(corrupt.count))
        for damage in corrupt {
            out.appendLE(UInt64(damage.offset))
            out.appendLE(UInt64(damage.length))
        }
        out.appendLE(out.withUnsafeBytes { CRC32C.checksum($0) })
        return out
    }

    /// The index in `bytes`, or nil if they are not a whole, undamaged index.
    static func decode(_ bytes: [UInt8]) -> SegmentIndex? {
        guard bytes.count >= magic.count + 4, Array(bytes[0..<magic.count]) == magic else { return nil }
        return bytes.withUnsafeBytes { raw -> SegmentIndex? in
            let body = UnsafeRawBufferPointer(rebasing: raw[0..<raw.count - 4])
            guard CRC32C.checksum(body) == raw.loadLE(UInt32.self, at: raw.count - 4) else { return nil }
            var r = PayloadReader(UnsafeRawBufferPointer(rebasing: body[magic.count...]))
            func int(_ value: UInt64?) -> Int? { value.flatMap { $0 <= SegmentHeader.maxValue ? Int($0) : nil } }
            guard let base = int(r.u64()), let dataStart = r.u32(), let end = int(r.u64()), let fileSize = int(r.u64()),
                  let records = int(r.u64()), let digest = r.u64(), let hasTimes = r.u8(), let first = r.u64(),
                  let last = r.u64(), let through = r.u64(), let idCount = r.u16() else { return nil }
            var nextIDs: [UInt8: UInt64] = [:]
            for _ in 0..<idCount {
                guard let kind = r.u8(), let id = r.u64() else { return nil }
                nextIDs[kind] = id
            }
            guard let countCount = r.u16() else { return nil }
            var counts: [UInt8: Int] = [:]
            for _ in 0..<countCount {
                guard let kind = r.u8(), let count = int(r.u64()) else { return nil }
                counts[kind] = count
            }
            guard let entryCount = r.u32(), Int(entryCount) <= body.count / 17 else { return nil }
            var entries: [(kind: UInt8, time: Int64, offset: Int)] = []
            entries.reserveCapacity(Int(entryCount))
            for _ in 0..<entryCount {
                guard let kind = r.u8(), let time = r.u64(), let offset = int(r.u64()) else { return nil }
                entries.append((kind, Int64(bitPattern: time), offset))
            }
            guard let corruptCount = r.u32(), Int(corruptCount) <= body.count / 16 else { return nil }
            var corrupt: [(offset: Int, length: Int)] = []
            for _ in 0..<corruptCount {
                guard let offset = int(r.u64()), let length = int(r.u64()) else { return nil }
                corrupt.append((offset, length))
            }
            guard r.offset == body.count - magic.count, end >= base else { return nil }
            return SegmentIndex(layout: SegmentLayout(base: base, dataStart: Int(dataStart)), end: end, fileSize: fileSize,
                                prefix: LogPrefix(end: end, records: records, digest: digest),
                                firstTime: hasTimes == 1 ? Int64(bitPattern: first) : nil,
                                lastTime: hasTimes == 1 ? Int64(bitPattern: last) : nil,
                                lastTimeThrough: Int64(bitPattern: through), nextIDs: nextIDs, counts: counts,
                                entries: entries, corrupt: corrupt)
        }
    }
}
