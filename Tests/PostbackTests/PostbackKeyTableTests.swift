import Foundation
import Postbacks
import Primitives
import RecordLog
import Testing

/// A segment's key table on disk: every key found in whichever block it lands, retry counts by
/// id, and a file that is not whole refused, never trusted, never a trap.
@Suite struct PostbackKeyTableTests {
    static func directory() -> String {
        let path = NSTemporaryDirectory() + "postback-keys-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// 700 postbacks (three blocks), ids from 1,000 with a gap, and a run of 300 equal hashes
    /// (one key stored again and again: conflicts) that spans a block boundary.
    static func postbacks() -> [(id: UInt64, hash: UInt64, start: Int)] {
        var out: [(id: UInt64, hash: UInt64, start: Int)] = []
        var id: UInt64 = 1000
        for i in 0..<700 {
            if i == 350 { id += 5 }  // records a damaged stretch held
            let hash: UInt64 = (200..<500).contains(i) ? 0x8000_0000_0000_0000 : UInt64(i) &* 0x9e37_79b9_7f4a_7c15
            out.append((id, hash, 64 + 300 * i))
            id += 1
        }
        return out
    }

    @Test func everyKeyIsFoundAndEveryCountRead() throws {
        let path = Self.directory() + "/4096.keys"
        let postbacks = Self.postbacks()
        let table = try PostbackKeyTable.write(path: path, segmentBase: 4096, segmentEnd: 1 << 20, postbacks: postbacks,
                                               retries: { UInt32($0 % 7) }, retriesThrough: 777)
        let opened = try #require(PostbackKeyTable.open(path: path))
        #expect(opened == table)
        #expect(opened.firstID == 1000 && opened.ids == 705 && opened.keys == 700 && opened.retriesThrough == 777)
        var expected: [UInt64: Set<Int>] = [:]
        for p in postbacks { expected[p.hash, default: []].insert(p.start) }
        for (hash, starts) in expected {
            let found = try opened.starts(of: hash)
            #expect(Set(found) == starts && found.count == starts.count)
        }
        // Hashes it does not hold: below, between and above every one it does.
        for hash: UInt64 in [0, 1, 0x7fff_ffff_ffff_ffff, 0x8000_0000_0000_0001, .max] where expected[hash] == nil {
            #expect(try opened.starts(of: hash).isEmpty)
        }
        // Counts by blocks of 1,024 ids: the first block, and the last, short one.
        let first = try opened.retryBlock(holding: 1003)
        #expect(first.ids == 1000..<1705 && first.counts == (1000..<1705).map { UInt32($0 % 7) })
        #expect(try opened.retryBlock(holding: 999).counts.isEmpty)
        #expect(try opened.retryBlock(holding: 1705).counts.isEmpty)
        #expect(opened.covers(id: 1704) && !opened.covers(id: 1705) && !opened.covers(id: 999))
    }

    @Test func aSegmentWithoutPostbacksHasAnEmptyTable() throws {
        let path = Self.directory() + "/0.keys"
        _ = try PostbackKeyTable.write(path: path, segmentBase: 0, segmentEnd: 100, postbacks: [], retries: { _ in 1 }, retriesThrough: 0)
        let table = try #require(PostbackKeyTable.open(path: path))
        #expect(table.ids == 0 && table.keys == 0)
        #expect(try table.starts(of: 0).isEmpty)
        #expect(try table.retryBlock(holding: 0).counts.isEmpty)
    }

    @Test func aFileThatIsNotWholeIsRefused() throws {
        let directory = Self.directory()
        let path = directory + "/4096.keys"
        let postbacks = Array(Self.postbacks().prefix(300))
        let table = try PostbackKeyTable.write(path: path, segmentBase: 4096, segmentEnd: 1 << 20, postbacks: postbacks,
                                               retries: { _ in 2 }, retriesThrough: 10)
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let probe = directory + "/probe.keys"
        // Every cut.
        for length in 0..<whole.count {
            try Data(whole[..<length]).write(to: URL(fileURLWithPath: probe))
            #expect(PostbackKeyTable.open(path: probe) == nil, "cut at \(length)")
        }
        // Every flipped byte of the header and of what follows the keys: the table is refused.
        let tailStart = 60 + 4 * table.ids + 16 * table.keys
        for i in Array(0..<60) + Array(tailStart..<whole.count) {
            var bytes = whole
            bytes[i] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: probe))
            #expect(PostbackKeyTable.open(path: probe) == nil, "flipped byte \(i)")
        }
        // A flipped byte in the counts or the keys: the table opens, and reading that block is an
        // error, never a wrong count or a miss; the other blocks still read.
        for i in stride(from: 60, to: tailStart, by: 7) {
            var bytes = whole
            bytes[i] ^= 0x10
            try Data(bytes).write(to: URL(fileURLWithPath: probe))
            let damaged = try #require(PostbackKeyTable.open(path: probe))
            if i < 60 + 4 * table.ids {
                #expect(throws: PostbackKeyTable.Unreadable.self) { try damaged.retryBlock(holding: 1000) }
            } else {
                let entry = (i - 60 - 4 * table.ids) / 16
                let block = entry / 256
                let sortedHashes = postbacks.map(\.hash).sorted()
                #expect(throws: PostbackKeyTable.Unreadable.self) { try damaged.starts(of: sortedHashes[block * 256]) }
            }
        }
        // Numbers past anything real under a checksum that matches them: refused, not allocated.
        for field in 0..<6 {
            var header = Array(whole[..<60])
            header.replaceSubrange((8 + 8 * field)..<(16 + 8 * field), with: withUnsafeBytes(of: UInt64.max.littleEndian, Array.init))
            let tail = Array(whole[tailStart..<(whole.count - 4)])
            let bytes = header + whole[60..<tailStart] + tail + withUnsafeBytes(of: CRC32C.checksum(header + tail).littleEndian, Array.init)
            try Data(bytes).write(to: URL(fileURLWithPath: probe))
            #expect(PostbackKeyTable.open(path: probe) == nil, "field \(field)")
        }
        #expect(PostbackKeyTable.open(path: path) == table)
    }

    @Test func theArchiveLoadsWholeTablesAndRemovesTheRest() throws {
        let directory = Self.directory()
        let postbacks = Self.postbacks()
        _ = try PostbackKeyTable.write(path: directory + "/0.keys", segmentBase: 0, segmentEnd: 1000,
                                       postbacks: Array(postbacks.prefix(100)), retries: { _ in 0 }, retriesThrough: 0)
        _ = try PostbackKeyTable.write(path: directory + "/1000.keys", segmentBase: 1000, segmentEnd: 2000,
                                       postbacks: Array(postbacks[100..<200]), retries: { _ in 0 }, retriesThrough: 0)
        // One over the same records (a copy by hand), a stray file, and a temporary one a crash left.
        _ = try PostbackKeyTable.write(path: directory + "/1500.keys", segmentBase: 1500, segmentEnd: 2500,
                                       postbacks: Array(postbacks[150..<250]), retries: { _ in 0 }, retriesThrough: 0)
        _ = FileManager.default.createFile(atPath: directory + "/notes.txt", contents: Data("x".utf8))
        _ = FileManager.default.createFile(atPath: directory + "/2000.keys.tmp", contents: Data([1, 2, 3]))
        let archive = try PostbackArchive(directory: directory)
        #expect(archive.tables.map(\.segmentBase) == [0, 1000])
        #expect(Set(archive.discarded.map { ($0 as NSString).lastPathComponent }) == ["1500.keys", "notes.txt", "2000.keys.tmp"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["0.keys", "1000.keys"])
        #expect(archive.table(covering: postbacks[0].id)?.segmentBase == 0)
        #expect(archive.table(covering: postbacks[150].id)?.segmentBase == 1000)
        #expect(archive.table(covering: postbacks[250].id) == nil)
        archive.removeTables(endingBy: 1000)
        #expect(archive.tables.map(\.segmentBase) == [1000])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["1000.keys"])
    }

    @Test func duplicateKeyHashesAreStable() {
        // Stored on disk: these values must never change. FNV-1a 64 of "a" is a published value.
        #expect(DuplicateKeyHash("").disk == 0xcbf2_9ce4_8422_2325)
        #expect(DuplicateKeyHash("a").disk == 0xaf63_dc4c_8601_ec8c)
        #expect(DuplicateKeyHash("foobar").disk == 0x8594_4171_f739_67e8)
        #expect(DuplicateKeyHash("a").other == DuplicateKeyHash(disk: 0, other: (0x8422_2325_cbf2_9ce4 ^ 0x61) &* 0x0000_0100_0000_01b3).other)
        #expect(DuplicateKeyHash("adattributionkit\u{1F}P-1").disk == DuplicateKeyHash("adattributionkit\u{1F}P-1").disk)
        #expect(DuplicateKeyHash("ab").disk != DuplicateKeyHash("ba").disk)
        #expect(DuplicateKeyHash("ab").other != DuplicateKeyHash("ba").other)
    }
}
