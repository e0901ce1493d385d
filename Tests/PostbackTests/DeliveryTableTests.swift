import Foundation
import Primitives
import RecordLog
import Testing
@testable import Postbacks

/// The ledger's window in memory: found by key and by id while it grows, after the oldest leave
/// and after releases, with every retry counted once.
@Suite struct DeliveryTableTests {
    private static func key(_ n: Int) -> DuplicateKeyHash { DuplicateKeyHash("adattributionkit\u{1F}postback-\(n)") }

    @Test func manyPostbacksAreFoundByKeyAndIdAsTheOldestLeave() {
        var table = DeliveryTable()
        let count = 50_000
        for n in 0..<count {
            table.append(DeliveryTable.Delivery(key: Self.key(n), id: UInt64(n) * 3, contentHash: UInt64(n), verified: n % 2 == 0,
                                                day: 20_000 + Int32(n / 10_000), site: UInt16(n % 3)))
        }
        #expect(table.live == count)
        // A second delivery under a key with other content: both found, oldest first.
        table.append(DeliveryTable.Delivery(key: Self.key(7), id: UInt64(count) * 3, contentHash: 999, verified: true, day: 20_010, site: 0))
        #expect(table.positions(of: Self.key(7)).map { table[$0].id } == [21, UInt64(count) * 3])
        for n in stride(from: 0, to: count, by: 997) {
            let found = table.positions(of: Self.key(n))
            #expect(found.count == (n == 7 ? 2 : 1) && table[found[0]].contentHash == UInt64(n) && table[found[0]].verified == (n % 2 == 0))
            #expect(table.position(of: UInt64(n) * 3).map { table[$0].site } == UInt16(n % 3))
            #expect(table.position(of: UInt64(n) * 3 + 1) == nil)
        }
        // A release is gone at once; the oldest 30,000 leave, each told once.
        let released = table.positions(of: Self.key(40_001))[0]
        table.remove(at: released)
        table.remove(at: released)
        #expect(table.positions(of: Self.key(40_001)).isEmpty && table.position(of: 40_001 * 3) == nil)
        var left = 0
        table.leave(through: 29_999 * 3) { _ in left += 1 }
        #expect(left == 30_000 && table.live == count + 1 - 1 - 30_000)
        #expect(table.positions(of: Self.key(29_999)).isEmpty && table.position(of: 29_999 * 3) == nil)
        #expect(table.positions(of: Self.key(30_000)).map { table[$0].id } == [30_000 * 3])
        // Growing again after the rebuild: everything live is still found, nothing gone comes back.
        for n in count..<(count + 20_000) {
            table.append(DeliveryTable.Delivery(key: Self.key(n), id: UInt64(count + 1 + n) * 3, contentHash: UInt64(n), verified: true, day: 20_011, site: 1))
        }
        var found = 0
        for n in 0..<(count + 20_000) where !table.positions(of: Self.key(n)).isEmpty { found += 1 }
        // 30,000 to 69,999 less the release, and key 7's second delivery, which came after the window.
        #expect(found == count + 20_000 - 30_000 - 1 + 1)
        // What is held follows what is live: once all but the newest ten have left, one chunk
        // and a small index are left.
        #expect(MemoryLayout<DeliveryTable.Delivery>.stride == 40)
        let newest = table[table.end - 11].id
        table.leave(through: newest) { _ in }
        #expect(table.live == 10)
        #expect(table.bytes <= DeliveryTable.chunkSize * 40 + 1024)
        #expect(table.positions(of: Self.key(count + 20_000 - 1)).count == 1 && table.positions(of: Self.key(count + 20_000 - 11)).isEmpty)
    }

    @Test func extremeDaysAndSitesAreKeptWithinTheirFields() {
        let ledger = PostbackLedger()
        // Days before 1970 or after 2149 (only a damaged clock gives one) are clamped, never a trap.
        ledger.record(duplicateKey: "a", contentHash: 1, id: 1, verified: true, origin: PostbackOrigin(day: -5, site: "app.example"))
        ledger.record(duplicateKey: "b", contentHash: 1, id: 2, verified: true, origin: PostbackOrigin(day: .max, site: "app.example"))
        #expect(ledger.origin(of: 1) == PostbackOrigin(day: 0, site: "app.example"))
        #expect(ledger.origin(of: 2) == PostbackOrigin(day: 65_535, site: "app.example"))
        // Past 16,383 sites the rest are one unnamed site; those before keep their names.
        for n in 0..<16_400 {
            ledger.record(duplicateKey: "s\(n)", contentHash: 1, id: UInt64(10 + n), verified: true, origin: PostbackOrigin(day: 20_000, site: "site-\(n).example"))
        }
        #expect(ledger.origin(of: 10 + 16_381)?.site == "site-16381.example")
        #expect(ledger.origin(of: 10 + 16_399)?.site == "")
        #expect(ledger.keysInMemory == 16_402)
    }

    @Test func aRetryRecordSaysItsOriginAndOlderOnesAreStillRead() throws {
        let directory = NSTemporaryDirectory() + "retry-records-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try RecordLog(directory: directory, committer: .owner)
        defer { store.close() }
        let origin = PostbackOrigin(day: 20_418, site: "app.example")
        store.appendRetry(of: 5, protocol: .skadnetwork, site: "app.example", origin: origin, steps: { _ in })
        // A site longer than a record keeps (255 bytes), and bytes that are not UTF-8 in the
        // original's site as a damaged record could hold: cut and read, never a trap.
        store.appendRetry(of: 6, protocol: .skadnetwork, site: String(repeating: "é", count: 300), origin: PostbackOrigin(day: -1, site: ""), steps: { _ in })
        // As written before the origin was kept, and before the site was.
        store.append(kind: .postbackRetry, tag: AttributionProtocol.skadnetwork.rawValue, steps: { _ in }) { out in
            out.appendLE(UInt64(7))
            out.append(3)
            out.append(contentsOf: Array("a.b".utf8))
        }
        store.append(kind: .postbackRetry, tag: AttributionProtocol.skadnetwork.rawValue, steps: { _ in }) { $0.appendLE(UInt64(8)) }
        // Cut inside the origin, and a site length past the record: the parts that are whole.
        store.append(kind: .postbackRetry, tag: AttributionProtocol.skadnetwork.rawValue, steps: { _ in }) { out in
            out.appendLE(UInt64(9))
            out.append(1)
            out.append(0x61)
            out.appendLE(Int32(3))
            out.append(200)
            out.append(0xFF)
        }
        store.commitQueued()
        var read: [String] = []
        store.scanEveryRecord(through: Int.max) { view in
            if let retry = RecordLog.retry(view) {
                read.append("\(retry.original) \(retry.site.utf8.count) \(retry.origin.map { "\($0.day) \($0.site)" } ?? "-")")
            }
            return true
        }
        #expect(read == ["5 11 20418 app.example", "6 254 -1 ", "7 3 -", "8 0 -", "9 1 -"])
    }
}
