#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import DurableFiles
import Primitives
import ReportStore

/// One sealed log segment's postbacks once their devices have stopped retrying: where each
/// duplicate key's postback is in the log, and how many retries of each the ledger counted. It
/// is what lets the ledger forget those postbacks and still catch a delivery that comes later
/// (`PostbackArchive`), and what `duplicates_received` reads for them.
///
/// The file (`postback-keys/<segment base>.keys`, little-endian):
///
///     "ATTRPBK1" | u64 segment base | u64 segment end | u64 first id | u64 ids | u64 keys
///     | u64 retries counted through (a log offset) | u32 reserved
///     | retries: u32 per id, first id on
///     | keys: (u64 `DuplicateKeyHash.disk`, u64 record start) per postback, sorted
///     | fence: the hash opening every block of `blockEntries` keys
///     | u32 CRC-32C of the header and the fence
///
/// A start reads the header and the fence only (8 bytes per 256 postbacks); a lookup reads one
/// block. A key block that lies only costs a record read that does not match, so the blocks carry
/// no checksum of their own.
public struct PostbackKeyTable: Sendable, Equatable {
    static let magic = Array("ATTRPBK1".utf8)
    static let headerSize = 8 + 6 * 8 + 4
    static let blockEntries = 256
    /// Beyond any log this endpoint writes; a header naming more is damaged.
    static let maxCount = 1 << 40

    public let path: String
    /// The segment's log offsets: its first record and just after its last.
    public let segmentBase: Int
    public let segmentEnd: Int
    /// The postbacks' ids are `firstID ..< firstID + ids` (one a damaged record held may be missing).
    public let firstID: UInt64
    public let ids: Int
    public let keys: Int
    /// Retry records up to this log offset are in the counts; a later one was counted after the
    /// table was written, and replay counts it again.
    public let retriesThrough: Int
    let fence: [UInt64]

    var retriesOffset: Int { Self.headerSize }
    var keysOffset: Int { Self.headerSize + 4 * ids }
    var fenceOffset: Int { keysOffset + 16 * keys }
    public var fileSize: Int { fenceOffset + 8 * fence.count + 4 }

    public func covers(id: UInt64) -> Bool { id >= firstID && id - firstID < UInt64(ids) }

    /// Writes the table for a segment's postbacks: `postbacks` as (id, duplicate key hash, record
    /// start), in log order; `retries(id)` the ledger's count.
    public static func write(path: String, segmentBase: Int, segmentEnd: Int,
                             postbacks: [(id: UInt64, hash: UInt64, start: Int)],
                             retries: (UInt64) -> UInt32, retriesThrough: Int) throws -> PostbackKeyTable {
        let firstID = postbacks.first?.id ?? 0
        let ids = postbacks.last.map { Int($0.id - firstID) + 1 } ?? 0
        let sorted = postbacks.map { (hash: $0.hash, start: $0.start) }.sorted { ($0.hash, $0.start) < ($1.hash, $1.start) }
        let fence = stride(from: 0, to: sorted.count, by: blockEntries).map { sorted[$0].hash }
        let table = PostbackKeyTable(path: path, segmentBase: segmentBase, segmentEnd: segmentEnd, firstID: firstID, ids: ids,
                                     keys: sorted.count, retriesThrough: retriesThrough, fence: fence)
        var out = table.header()
        out.reserveCapacity(table.fileSize)
        for i in 0..<ids { out.appendLE(retries(firstID + UInt64(i))) }
        for key in sorted {
            out.appendLE(key.hash)
            out.appendLE(UInt64(key.start))
        }
        let fenceStart = out.count
        for hash in fence { out.appendLE(hash) }
        var checked = Array(out[..<headerSize])
        checked.append(contentsOf: out[fenceStart...])
        out.appendLE(CRC32C.checksum(checked))
        try DurableFile.replace(path: path, with: out)
        return table
    }

    private func header() -> [UInt8] {
        var out = Self.magic
        for value in [UInt64(segmentBase), UInt64(segmentEnd), firstID, UInt64(ids), UInt64(keys), UInt64(retriesThrough)] {
            out.appendLE(value)
        }
        out.appendLE(UInt32(0))
        return out
    }

    /// The table at `path`, from its header and fence; nil when the file is not a whole table
    /// (cut short, another version, a checksum that does not match).
    public static func open(path: String) -> PostbackKeyTable? {
        let fd = systemOpen(path)
        guard fd >= 0 else { return nil }
        defer { _ = close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, let head = readFully(fd, at: 0, count: headerSize),
              Array(head[0..<8]) == magic else { return nil }
        let numbers = (0..<6).map { head.loadLE(UInt64.self, at: 8 + 8 * $0) }
        let (base, end, ids, keys, through) = (numbers[0], numbers[1], numbers[3], numbers[4], numbers[5])
        guard base <= UInt64(maxCount), end <= UInt64(maxCount), ids <= UInt64(maxCount), keys <= UInt64(maxCount),
              through <= UInt64(maxCount), base <= end, keys <= ids, numbers[2] <= UInt64.max - ids else { return nil }
        let blocks = (Int(keys) + blockEntries - 1) / blockEntries
        let fenceOffset = headerSize + 4 * Int(ids) + 16 * Int(keys)
        guard Int(st.st_size) == fenceOffset + 8 * blocks + 4,
              let tail = readFully(fd, at: fenceOffset, count: 8 * blocks + 4) else { return nil }
        var checked = head
        checked.append(contentsOf: tail[..<(8 * blocks)])
        guard CRC32C.checksum(checked) == tail.loadLE(UInt32.self, at: 8 * blocks) else { return nil }
        let fence = (0..<blocks).map { tail.loadLE(UInt64.self, at: 8 * $0) }
        return PostbackKeyTable(path: path, segmentBase: Int(base), segmentEnd: Int(end), firstID: numbers[2], ids: Int(ids),
                                keys: Int(keys), retriesThrough: Int(through), fence: fence)
    }

    /// Where the postbacks whose key hashes to `hash` begin in the log; empty when the file
    /// cannot be read.
    public func starts(of hash: UInt64) -> [Int] {
        guard !fence.isEmpty else { return [] }
        // Blocks from the last one opening below `hash` (the key may run on from it) to the last
        // one opening at or below it.
        let firstAtOrAbove = partition { $0 < hash }
        let firstAbove = partition { $0 <= hash }
        guard firstAbove > 0 else { return [] }
        let from = max(0, firstAtOrAbove - 1), through = firstAbove - 1
        let fd = systemOpen(path)
        guard fd >= 0 else { return [] }
        defer { _ = close(fd) }
        let firstEntry = from * Self.blockEntries
        let entries = min(keys, (through + 1) * Self.blockEntries) - firstEntry
        guard entries > 0, let bytes = Self.readFully(fd, at: keysOffset + 16 * firstEntry, count: 16 * entries) else { return [] }
        var starts: [Int] = []
        for i in 0..<entries where bytes.loadLE(UInt64.self, at: 16 * i) == hash {
            let start = bytes.loadLE(UInt64.self, at: 16 * i + 8)
            if start <= UInt64(Self.maxCount) { starts.append(Int(start)) }
        }
        return starts
    }

    /// The retries counted for the postbacks `ids` (within this table), read in one go.
    public func retries(of range: Range<UInt64>) -> [UInt32]? {
        guard let first = range.first, covers(id: first), covers(id: range.upperBound - 1) else { return nil }
        let fd = systemOpen(path)
        guard fd >= 0 else { return nil }
        defer { _ = close(fd) }
        guard let bytes = Self.readFully(fd, at: retriesOffset + 4 * Int(first - firstID), count: 4 * range.count) else { return nil }
        return (0..<range.count).map { bytes.loadLE(UInt32.self, at: 4 * $0) }
    }

    /// The index of the first fence entry for which `below` is false.
    private func partition(_ below: (UInt64) -> Bool) -> Int {
        var low = 0, high = fence.count
        while low < high {
            let mid = (low + high) / 2
            if below(fence[mid]) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private static func readFully(_ fd: Int32, at offset: Int, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }
}

private func systemOpen(_ path: String) -> Int32 {
    open(path, O_RDONLY | O_CLOEXEC)
}
