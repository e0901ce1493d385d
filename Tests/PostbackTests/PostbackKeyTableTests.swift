import Foundation
import Postbacks
import Primitives
import ReportStore
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
            #expect(Set(opened.starts(of: hash)) == starts)
            #expect(opened.starts(of: hash).count == starts.count)
        }
        // Hashes it does not hold: below, between and above every one it does.
        for hash: UInt64 in [0, 1, 0x7fff_ffff_ffff_ffff, 0x8000_0000_0000_0001, .max] where expected[hash] == nil {
            #expect(opened.starts(of: hash).isEmpty)
        }
        #expect(opened.retries(of: 1000..<1010) == (1000..<1010).map { UInt32($0 % 7) })
        #expect(opened.retries(of: 1700..<1705) == (1700..<1705).map { UInt32($0 % 7) })
        #expect(opened.retries(of: 999..<1001) == nil)
        #expect(opened.retries(of: 1704..<1706) == nil)
        #expect(opened.covers(id: 1704) && !opened.covers(id: 1705) && !opened.covers(id: 999))
    }

    @Test func aSegmentWithoutPostbacksHasAnEmptyTable() throws {
        let path = Self.directory() + "/0.keys"
        _ = try PostbackKeyTable.write(path: path, segmentBase: 0, segmentEnd: 100, postbacks: [], retries: { _ in 1 }, retriesThrough: 0)
        let table = try #require(PostbackKeyTable.open(path: path))
        #expect(table.ids == 0 && table.keys == 0 && table.starts(of: 0).isEmpty && table.retries(of: 0..<1) == nil)
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
        // Every flipped byte of the header and the fence; one in the counts or the keys is caught
        // by what the record read back says (`PostbackArchive.earlier`), never trusted alone.
        let fenceStart = whole.count - 4 - 8 * 2
        for i in Array(0..<60) + Array(fenceStart..<whole.count) {
            var bytes = whole
            bytes[i] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: probe))
            #expect(PostbackKeyTable.open(path: probe) == nil, "flipped byte \(i)")
        }
        // Numbers past anything real under a checksum that matches them: refused, not allocated.
        for field in 0..<6 {
            var bytes = Array(whole[..<60])
            bytes.replaceSubrange((8 + 8 * field)..<(16 + 8 * field), with: withUnsafeBytes(of: UInt64.max.littleEndian, Array.init))
            var checked = bytes
            checked.append(contentsOf: whole[fenceStart..<(whole.count - 4)])
            bytes += whole[60..<(whole.count - 4)]
            bytes += withUnsafeBytes(of: CRC32C.checksum(checked).littleEndian, Array.init)
            try Data(bytes).write(to: URL(fileURLWithPath: probe))
            #expect(PostbackKeyTable.open(path: probe) == nil, "field \(field)")
        }
        // A table whose keys lie only costs a record that does not match; its starts are as written.
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
        FileManager.default.createFile(atPath: directory + "/notes.txt", contents: Data("x".utf8))
        FileManager.default.createFile(atPath: directory + "/2000.keys.tmp", contents: Data([1, 2, 3]))
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
        // Stored on disk: these values must never change.
        #expect(DuplicateKeyHash("").disk == 0xcbf2_9ce4_8422_2325)
        #expect(DuplicateKeyHash("adattributionkit\u{1F}P-1").disk == DuplicateKeyHash("adattributionkit\u{1F}P-1").disk)
        #expect(DuplicateKeyHash("ab").disk != DuplicateKeyHash("ba").disk)
        #expect(DuplicateKeyHash("ab").other != DuplicateKeyHash("ba").other)
    }
}
