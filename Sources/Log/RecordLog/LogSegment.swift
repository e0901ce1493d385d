import Foundation
import Primitives

/// One file of the log. The log is one run of bytes, addressed by offsets that never change (the
/// export's cursors, the summary's checkpoint and `RecordView.end` all name them); it is kept in
/// segments so that old ones can be removed whole (`--retention-days`).
///
/// - `reports.log` is the active segment: the only one written, and the only one a torn tail can
///   be in.
/// - `log/<base>.log` are sealed segments: never written again, each with its index beside it
///   (`log/<base>.index`, `SegmentIndex`), so that a start need not read them.
///
/// The segment that starts at offset 0 has no header: a log written before segments existed is
/// exactly that segment. Every other starts with a `SegmentHeader`, which carries what the log
/// before it held (its fingerprint, the ids given, the last time), so that a segment stays
/// readable after every one before it is removed.
struct SegmentLayout: Sendable, Equatable {
    /// The log offset of the segment's first byte of records.
    var base: Int
    /// Bytes of header before the records in the file (0 for the first segment).
    var dataStart: Int

    /// Where log offset `offset` is in the file.
    func fileOffset(_ offset: Int) -> Int { offset - base + dataStart }
}

/// A segment's open file, closed when the last reader lets it go: retention may unlink a segment
/// while an export reads it, and the reader finishes from its descriptor.
final class SegmentFile: @unchecked Sendable {
    let file: LogFile

    init(_ file: LogFile) { self.file = file }

    /// Opens an existing segment for reading.
    static func openForReading(_ path: String) throws(StoreError) -> SegmentFile {
        SegmentFile(try LogFile.open(path: path, create: false, readOnly: true))
    }

    deinit { file.close() }
}

/// What a segment other than the first begins with.
///
/// ```
/// 0  8 bytes  "ATTRSEG1" (never a record's start, whose first bytes are 7E A7)
/// 8  u32      header length, this field and the checksum included
/// 12 u64      base: the log offset of the first record
/// 20 u64      records before the base, of every kind   ┐ the log's LogPrefix at the base
/// 28 u64      their digest                             ┘
/// 36 i64      the last receive time before the base, in ms
/// 44 u16      n, then n × (u8 kind, u64 next id): the ids the log gave before the base
/// …  u16      m, then m × (u8 kind, u64 records): the records of each kind before the base
/// …  u32      CRC-32C of everything before it
/// ```
struct SegmentHeader: Equatable {
    static let magic = Array("ATTRSEG1".utf8)

    var base: Int
    var prefix: LogPrefix
    var lastTime: Int64
    /// The next id of each kind that has one, by the kind's number.
    var nextIDs: [UInt8: UInt64]
    /// Records of each kind before the base, removed segments' included.
    var counts: [UInt8: Int] = [:]

    func encoded() -> [UInt8] {
        var out = Self.magic
        out.appendLE(UInt32(0))
        out.appendLE(UInt64(base))
        out.appendLE(UInt64(prefix.records))
        out.appendLE(prefix.digest)
        out.appendLE(lastTime)
        let kinds = nextIDs.keys.sorted()
        out.appendLE(UInt16(kinds.count))
        for kind in kinds {
            out.append(kind)
            out.appendLE(nextIDs[kind] ?? 0)
        }
        let counted = counts.keys.sorted()
        out.appendLE(UInt16(counted.count))
        for kind in counted {
            out.append(kind)
            out.appendLE(UInt64(counts[kind] ?? 0))
        }
        let length = UInt32(out.count + 4)
        out.withUnsafeMutableBytes { $0.storeBytes(of: length.littleEndian, toByteOffset: 8, as: UInt32.self) }
        out.appendLE(out.withUnsafeBytes { CRC32C.checksum($0) })
        return out
    }

    enum Read: Equatable {
        case header(SegmentHeader, length: Int)
        /// The file does not start with a header's magic: a headerless first segment, or nothing.
        case none
        /// It starts like one but is cut short or fails its checksum: a roll that crashed.
        case damaged
    }

    /// Offsets and counts past this are damage: far beyond any real log, and far enough below
    /// `Int.max` that adding to them cannot overflow.
    static let maxValue: UInt64 = 1 << 62

    static func read(_ file: LogFile) throws(StoreError) -> Read {
        var head = [UInt8](repeating: 0, count: 4096)
        let got = try head.withUnsafeMutableBytes { raw in
            Result { () throws(StoreError) in try file.read(into: raw, at: 0) }
        }.get()
        guard got >= magic.count, Array(head[0..<magic.count]) == magic else { return .none }
        return head.withUnsafeBytes { bytes -> Read in
            guard got >= 16 else { return .damaged }
            let length = Int(bytes.loadLE(UInt32.self, at: 8))
            guard length >= 52, length <= got else { return .damaged }
            guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<length - 4])) == bytes.loadLE(UInt32.self, at: length - 4) else {
                return .damaged
            }
            var reader = PayloadReader(UnsafeRawBufferPointer(rebasing: bytes[12..<length - 4]))
            guard let base = reader.u64(), let records = reader.u64(), let digest = reader.u64(), let lastTime = reader.u64(),
                  let count = reader.u16(), base <= SegmentHeader.maxValue, records <= SegmentHeader.maxValue else { return .damaged }
            var nextIDs: [UInt8: UInt64] = [:]
            for _ in 0..<count {
                guard let kind = reader.u8(), let id = reader.u64() else { return .damaged }
                nextIDs[kind] = id
            }
            guard let counted = reader.u16() else { return .damaged }
            var counts: [UInt8: Int] = [:]
            for _ in 0..<counted {
                guard let kind = reader.u8(), let count = reader.u64(), count <= SegmentHeader.maxValue else { return .damaged }
                counts[kind] = Int(count)
            }
            let header = SegmentHeader(base: Int(base), prefix: LogPrefix(end: Int(base), records: Int(records), digest: digest),
                                       lastTime: Int64(bitPattern: lastTime), nextIDs: nextIDs, counts: counts)
            return .header(header, length: length)
        }
    }
}

/// The log's files in the data directory.
struct LogDirectory {
    let directory: String

    var activePath: String { directory + "/reports.log" }
    /// Where the next active segment is made before it takes `reports.log`'s name.
    var nextPath: String { directory + "/reports.log.next" }
    var sealedDirectory: String { directory + "/log" }
    /// Where the log begins since retention last removed segments (absent: offset 0). Written
    /// before any segment is removed, so that a log found to begin later (`log/` lost in a
    /// restore, a segment deleted by hand) is refused rather than taken for retention's work.
    var startPath: String { sealedDirectory + "/START" }

    func sealedPath(base: Int) -> String { sealedDirectory + "/" + Self.name(base) + ".log" }
    func indexPath(base: Int) -> String { sealedDirectory + "/" + Self.name(base) + ".index" }

    /// Twenty digits, so that names sort as their offsets do.
    static func name(_ base: Int) -> String {
        let digits = String(base)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// The sealed segments' bases, in order: files named by twenty digits and `.log`.
    func sealedBases() throws(StoreError) -> [Int] {
        guard FileManager.default.fileExists(atPath: sealedDirectory) else { return [] }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: sealedDirectory)
        } catch {
            throw StoreError(operation: "list \(sealedDirectory)", errno: EIO)
        }
        return names.compactMap { name -> Int? in
            let digits = name.utf8.dropLast(4)
            guard name.hasSuffix(".log"), digits.count == 20, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let base = Int(String(decoding: digits, as: UTF8.self)), base <= Int(SegmentHeader.maxValue) else { return nil }
            return base
        }.sorted()
    }

    /// The offset the log begins at, as retention last wrote it; 0 without the file.
    func start() throws(StoreError) -> Int {
        guard let data = FileManager.default.contents(atPath: startPath) else {
            if FileManager.default.fileExists(atPath: startPath) { throw StoreError(operation: "read \(startPath)", errno: EIO) }
            return 0
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let start = Int(text), start >= 0, start <= Int(SegmentHeader.maxValue) else {
            throw StoreError(operation: "read \(startPath): \"\(text.prefix(40))\" is not a log offset", errno: EINVAL)
        }
        return start
    }

    func setStart(_ offset: Int) throws(StoreError) {
        try LogFile.replaceWhole(path: startPath, with: Array("\(offset)\n".utf8))
    }

    /// Finishes or undoes a roll that a crash interrupted. A roll makes `reports.log.next`, then
    /// renames `reports.log` into `log/`, then `reports.log.next` to `reports.log`: with both
    /// there the roll never happened; with only the new one it was nearly done.
    func recoverInterruptedRoll() throws(StoreError) {
        let fm = FileManager.default
        guard fm.fileExists(atPath: nextPath) else { return }
        if fm.fileExists(atPath: activePath) {
            guard unlink(nextPath) == 0 else { throw StoreError(operation: "unlink \(nextPath)", errno: errno) }
        } else {
            guard rename(nextPath, activePath) == 0 else { throw StoreError(operation: "rename \(nextPath)", errno: errno) }
        }
        LogFile.syncDirectory(directory)
    }
}
