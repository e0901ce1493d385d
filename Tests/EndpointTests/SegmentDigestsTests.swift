import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog
import SiteOwners
import Testing
@testable import Endpoint

/// The digests of sealed segments on their own, over a real log with a segment a day and an owner
/// that counts records: each sealed segment gets one, a start takes them instead of the log, a
/// damaged one sends the start back to the log from its segment on, and retention's removals take
/// theirs with them.
@Suite struct SegmentDigestsTests {
    /// Counts the records of each segment; a start adds the counts it takes from digests.
    final class Counter: SegmentDigestOwner {
        let digestName = "count-1"
        let taken = Locked(0)

        struct Digester: SegmentDigester {
            var records = 0
            mutating func take(_ record: RecordLog.RecordView) { records += 1 }
            func finish() -> [UInt8] { Array(String(records).utf8) }
        }

        func digester() -> any SegmentDigester { Digester() }

        func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
            guard let count = Int(String(decoding: bytes, as: UTF8.self)) else { return nil }
            return { [taken] in taken.withLock { $0 += count } }
        }
    }

    static let day0 = Timestamp(rfc3339: "2026-11-01T12:00:00Z")!

    /// A log with `perDay[i]` records on day i, each day a segment (the last one active).
    func log(_ directory: String, perDay: [Int]) throws -> RecordLog {
        let clock = EndpointClock(manual: true)
        clock.set(Self.day0)
        let store = try RecordLog(directory: directory, clock: { clock.now() })
        for (day, count) in perDay.enumerated() {
            clock.set(Timestamp(millisecondsSinceEpoch: Self.day0.millisecondsSinceEpoch + Int64(day) * TimingModel.day))
            for _ in 0..<count {
                let done = DispatchSemaphore(value: 0)
                _ = store.append(kind: RecordKind(9, name: "test"), tag: 0, completion: { _ in done.signal() }) { $0.append(1) }
                done.wait()
            }
        }
        return store
    }

    func digests(_ directory: String, _ store: RecordLog, _ owner: Counter, restored: SegmentDigests.Restored = .init()) throws -> SegmentDigests {
        try SegmentDigests(directory: directory + "/digests", owners: [owner], store: store, restored: restored,
                           clock: EndpointClock(manual: true), announce: { _, _ in })
    }

    @Test func everySealedSegmentGetsOneAndAStartTakesThemInsteadOfTheLog() throws {
        let directory = temporaryDirectory()
        let store = try log(directory, perDay: [3, 1, 4, 1, 5])
        let digests = try digests(directory, store, Counter())
        let written = digests.sweep()
        let sealed = store.segments.filter(\.sealed)
        #expect(sealed.count == 4)
        #expect(written.map(\.base) == sealed.map(\.base))
        #expect(digests.digestedThrough == sealed.last!.end)
        #expect(digests.sweep().isEmpty, "nothing is written twice")
        store.close()

        let owner = Counter()
        let chain = SegmentDigests.chain(dataDirectory: directory, directory: directory + "/digests", owners: [owner])
        let taken = SegmentDigests.take(chain, directory: directory + "/digests", owners: [owner])
        #expect(taken.digests.map(\.base) == sealed.map(\.base))
        // The four sealed days' records, without reading them; the log is read from the last seal.
        let counted = owner.taken.withLock { $0 }
        #expect(counted == 9)
        #expect(taken.replayFrom == sealed.last!.end)
    }

    @Test func aDamagedDigestSendsTheStartBackToTheLogFromItsSegment() throws {
        let directory = temporaryDirectory()
        let store = try log(directory, perDay: [2, 2, 2, 2])
        _ = try digests(directory, store, Counter()).sweep()
        let sealed = store.segments.filter(\.sealed)
        store.close()
        // The second segment's digest is cut short.
        let path = directory + "/digests/\(sealed[1].base).digest"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))

        let owner = Counter()
        let chain = SegmentDigests.chain(dataDirectory: directory, directory: directory + "/digests", owners: [owner])
        let taken = SegmentDigests.take(chain, directory: directory + "/digests", owners: [owner])
        #expect(taken.digests.map(\.base) == [sealed[0].base])
        let counted = owner.taken.withLock { $0 }
        #expect(counted == 2, "only what comes before the damage")
        #expect(taken.replayFrom == sealed[0].end, "the log is read from the damaged digest's segment on")

        // The next sweep writes it again, whole; the one after it, whole on disk, is kept.
        let reopened = try RecordLog(directory: directory)
        defer { reopened.close() }
        let again = try digests(directory, reopened, Counter(), restored: taken)
        #expect(again.sweep().map(\.base) == [sealed[1].base])
        #expect(again.digestedThrough == sealed.last!.end)
    }

    @Test func aDigestOfAnotherLogIsRemovedAtOnce() throws {
        let directory = temporaryDirectory()
        let store = try log(directory, perDay: [1, 1, 1])
        _ = try digests(directory, store, Counter()).sweep()
        store.close()
        let owner = Counter()
        var chain = SegmentDigests.chain(dataDirectory: directory, directory: directory + "/digests", owners: [owner])
        let first = try #require(chain.digests.first)
        // Restored from a backup: a digest that names other bytes in the first segment's place.
        chain.digests[0] = SegmentDigest(base: first.base, end: first.end + 1, records: first.records, sections: [:])
        let reopened = try RecordLog(directory: directory)
        defer { reopened.close() }
        _ = try digests(directory, reopened, owner, restored: chain)
        #expect(!FileManager.default.fileExists(atPath: directory + "/digests/\(first.base).digest"))
    }

    @Test func retentionsRemovalsTakeTheirDigestsWithThem() throws {
        let directory = temporaryDirectory()
        let store = try log(directory, perDay: [1, 1, 1, 1])
        defer { store.close() }
        let digests = try digests(directory, store, Counter())
        let sealed = store.segments.filter(\.sealed)
        #expect(digests.sweep().count == 3)
        let removed = store.removeSegments { $0.base < sealed[2].base }
        #expect(removed.map(\.base) == [sealed[0].base, sealed[1].base])
        _ = digests.sweep()
        for segment in removed {
            #expect(!FileManager.default.fileExists(atPath: directory + "/digests/\(segment.base).digest"))
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/digests/\(sealed[2].base).digest"))
        #expect(digests.count == 1)
    }
}
