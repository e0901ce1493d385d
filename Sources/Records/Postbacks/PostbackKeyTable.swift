#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import DurableFiles
import Primitives
import RecordLog

/// One sealed log segment's postbacks once their devices have stopped retrying: where each
/// duplicate key's postback is in the log, and how many retries of each the ledger counted. It
/// is what lets the ledger forget those postbacks and still catch a delivery that comes later
/// (`PostbackArchive`), and what `duplicates_received` reads for them.
///
/// The file (`postback-keys/<segment base>.keys`, little-endian):
///
///     "ATTRPBK2" | u64 segment base | u64 segment end | u64 first id | u64 ids | u64 keys
///     | u64 retries counted through (a log offset) | u32 reserved
///     | counts: u32 per id, first id on, in blocks of `countBlock`
///     | keys: (u64 `DuplicateKeyHash.disk`, u64 record start) per postback, sorted, in blocks of `keyBlock`
///     | fence: the hash opening every key block
///     | u32 CRC-32C of every key block, then of every count block
///     | u32 CRC-32C of the header and everything after the keys
///
/// A start reads the header and what follows the keys (16 bytes per 256 postbacks); a lookup
/// reads the key blocks its hash may be in, and a count the block that holds it. A block whose
/// checksum fails is an error, never a miss: a table that lies could hide a duplicate.
public struct PostbackKeyTable: Sendable, Equatable {
    static let magic = Array("ATTRPBK2".utf8)
    public static let headerSize = 8 + 6 * 8 + 4
    static let keyBlock = 256
    static let countBlock = 1024
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
    let keyChecks: [UInt32]
    let countChecks: [UInt32]

    /// The file cannot be read, or a block of it is not what was written.
    public struct Unreadable: Error, Sendable {
        public var path: String

        public init(path: String) {
            self.path = path
        }
    }

    var countsOffset: Int { Self.headerSize }
    var keysOffset: Int { Self.headerSize + 4 * ids }
    var tailOffset: Int { keysOffset + 16 * keys }
    public var fileSize: Int { tailOffset + 8 * fence.count + 4 * (keyChecks.count + countChecks.count) + 4 }

    public func covers(id: UInt64) -> Bool { id >= firstID && id - firstID < UInt64(ids) }

    static func blocks(_ count: Int, of size: Int) -> Int { (count + size - 1) / size }

    /// Writes the table for a segment's postbacks: `postbacks` as (id, duplicate key hash, record
    /// start), in log order; `retries(id)` the ledger's count.
    public static func write(path: String, segmentBase: Int, segmentEnd: Int,
                             postbacks: [(id: UInt64, hash: UInt64, start: Int)],
                             retries: (UInt64) -> UInt32, retriesThrough: Int) throws -> PostbackKeyTable {
        let firstID = postbacks.first?.id ?? 0
        let ids = postbacks.last.map { Int($0.id - firstID) + 1 } ?? 0
        let sorted = postbacks.map { (hash: $0.hash, start: $0.start) }.sorted { ($0.hash, $0.start) < ($1.hash, $1.start) }
        var counts: [UInt8] = [], keys: [UInt8] = []
        counts.reserveCapacity(4 * ids)
        for i in 0..<ids { counts.appendLE(retries(firstID + UInt64(i))) }
        keys.reserveCapacity(16 * sorted.count)
        for key in sorted {
            keys.appendLE(key.hash)
            keys.appendLE(UInt64(key.start))
        }
        func checks(_ bytes: [UInt8], block: Int) -> [UInt32] {
            stride(from: 0, to: bytes.count, by: block).map { CRC32C.checksum(Array(bytes[$0..<min(bytes.count, $0 + block)])) }
        }
        let table = PostbackKeyTable(path: path, segmentBase: segmentBase, segmentEnd: segmentEnd, firstID: firstID, ids: ids,
                                     keys: sorted.count, retriesThrough: retriesThrough,
                                     fence: stride(from: 0, to: sorted.count, by: keyBlock).map { sorted[$0].hash },
                                     keyChecks: checks(keys, block: 16 * keyBlock), countChecks: checks(counts, block: 4 * countBlock))
        let header = table.header(), tail = table.tail()
        try DurableFile.replace(path: path, with: header + counts + keys + tail + littleEndian(CRC32C.checksum(header + tail)))
        return table
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLE(value)
        return out
    }

    private func header() -> [UInt8] {
        var out = Self.magic
        for value in [UInt64(segmentBase), UInt64(segmentEnd), firstID, UInt64(ids), UInt64(keys), UInt64(retriesThrough)] {
            out.appendLE(value)
        }
        out.appendLE(UInt32(0))
        return out
    }

    private func tail() -> [UInt8] {
        var out: [UInt8] = []
        for hash in fence { out.appendLE(hash) }
        for check in keyChecks + countChecks { out.appendLE(check) }
        return out
    }

    /// The table at `path`, from its header and what follows its keys; nil when the file is not
    /// a whole table (cut short, another version, a checksum that does not match).
    public static func open(path: String) -> PostbackKeyTable? {
        let fd = openForReading(path)
        guard fd >= 0 else { return nil }
        defer { _ = close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, let head = readFully(fd, at: 0, count: headerSize),
              Array(head[0..<8]) == magic else { return nil }
        let numbers = (0..<6).map { head.loadLE(UInt64.self, at: 8 + 8 * $0) }
        let (base, end, firstID, ids, keys, through) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
        let limit = UInt64(maxCount)
        guard base <= limit, end <= limit, ids <= limit, keys <= limit, through <= limit, base <= end, keys <= ids,
              firstID <= UInt64.max - ids else { return nil }
        let keyBlocks = blocks(Int(keys), of: keyBlock), countBlocks = blocks(Int(ids), of: countBlock)
        let tailOffset = headerSize + 4 * Int(ids) + 16 * Int(keys)
        let tailSize = 8 * keyBlocks + 4 * (keyBlocks + countBlocks)
        guard Int(st.st_size) == tailOffset + tailSize + 4, let tail = readFully(fd, at: tailOffset, count: tailSize + 4),
              CRC32C.checksum(head + Array(tail[..<tailSize])) == tail.loadLE(UInt32.self, at: tailSize) else { return nil }
        let fence = (0..<keyBlocks).map { tail.loadLE(UInt64.self, at: 8 * $0) }
        let checks = (0..<(keyBlocks + countBlocks)).map { tail.loadLE(UInt32.self, at: 8 * keyBlocks + 4 * $0) }
        return PostbackKeyTable(path: path, segmentBase: Int(base), segmentEnd: Int(end), firstID: firstID, ids: Int(ids),
                                keys: Int(keys), retriesThrough: Int(through), fence: fence,
                                keyChecks: Array(checks[..<keyBlocks]), countChecks: Array(checks[keyBlocks...]))
    }

    /// Where the postbacks whose key hashes to `hash` begin in the log.
    public func starts(of hash: UInt64) throws(Unreadable) -> [Int] {
        guard !fence.isEmpty else { return [] }
        // Blocks from the last one opening below `hash` (the key may run on from it) to the last
        // one opening at or below it.
        let firstAbove = partition { $0 <= hash }
        guard firstAbove > 0 else { return [] }
        let from = max(0, partition { $0 < hash } - 1), through = firstAbove - 1
        let fd = Self.openForReading(path)
        guard fd >= 0 else { throw Unreadable(path: path) }
        defer { _ = close(fd) }
        var starts: [Int] = []
        for block in from...through {
            let first = block * Self.keyBlock, count = min(keys - first, Self.keyBlock)
            guard let bytes = Self.readFully(fd, at: keysOffset + 16 * first, count: 16 * count),
                  CRC32C.checksum(bytes) == keyChecks[block] else { throw Unreadable(path: path) }
            for i in 0..<count where bytes.loadLE(UInt64.self, at: 16 * i) == hash {
                let start = bytes.loadLE(UInt64.self, at: 16 * i + 8)
                if start <= UInt64(Self.maxCount) { starts.append(Int(start)) }
            }
        }
        return starts
    }

    /// The counts of the block of ids that holds `id`, and the ids it covers.
    public func retryBlock(holding id: UInt64) throws(Unreadable) -> (ids: Range<UInt64>, counts: [UInt32]) {
        guard covers(id: id) else { return (id..<id, []) }
        let block = Int(id - firstID) / Self.countBlock
        let first = block * Self.countBlock, count = min(ids - first, Self.countBlock)
        let fd = Self.openForReading(path)
        guard fd >= 0 else { throw Unreadable(path: path) }
        defer { _ = close(fd) }
        guard let bytes = Self.readFully(fd, at: countsOffset + 4 * first, count: 4 * count),
              CRC32C.checksum(bytes) == countChecks[block] else { throw Unreadable(path: path) }
        let start = firstID + UInt64(first)
        return (start..<(start + UInt64(count)), (0..<count).map { bytes.loadLE(UInt32.self, at: 4 * $0) })
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
            let n = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress.map { $0 + done }, count - done, off_t(offset + done))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    private static func openForReading(_ path: String) -> Int32 {
        systemOpen(path, O_RDONLY | O_CLOEXEC)
    }
}

private func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags)
    #else
    Darwin.open(path, flags)
    #endif
}
