import Foundation
import Locking
import Primitives
import Testing
@testable import PCMRecords
@testable import RecordLog

/// `LogBackup`: a copy of a log taken while it is written, and `LogRestore`: the ids a restored log
/// gives.
@Suite struct LogBackupTests {
    @Test func aCopyTakenWhileRecordsArriveHoldsEveryAcknowledgedOneAndOpensClean() throws {
        let dir = temporaryDirectory(), copy = temporaryDirectory() + "/backup"
        // Small segments: rolls happen during the copy too.
        let store = try RecordLog(directory: dir, segments: SegmentPolicy(maxBytes: 20_000, rollsDaily: false))
        let acknowledged = Locked<[UInt64]>([])
        let stop = Locked(false)
        let writers = DispatchGroup()
        for w in 0..<4 {
            writers.enter()
            Thread.detachNewThread {
                var n = w * 1_000_000
                while !stop.withLock({ $0 }) {
                    if let report = try? appendAndWait(store, draft(n)) { acknowledged.withLock { $0.append(report.id) } }
                    n += 1
                }
                writers.leave()
            }
        }
        while acknowledged.withLock({ $0.count }) < 400 {}  // spinning on the writers' own progress
        let before = Set(acknowledged.withLock { $0 })
        let copied = try LogBackup.copy(from: dir, to: copy)
        stop.withLock { $0 = true }
        writers.wait()
        store.close()

        #expect(copied.sealedBases.count >= 2)
        let restored = try RecordLog(directory: copy)
        defer { restored.close() }
        #expect(restored.replay.corruptRecords.isEmpty)
        #expect(restored.replay.tornTailBytes == 0)
        #expect(restored.durablePrefix.end == copied.end)
        let held = Set(all(restored).map(\.id))
        #expect(before.isSubset(of: held))
        // What the copy holds is exactly the original up to the cut.
        let original = try RecordLog(directory: dir)
        defer { original.close() }
        #expect(all(original).map(\.id).filter { held.contains($0) } == all(restored).map(\.id))
        // Sealed segments are links to the same files, never written again.
        for base in copied.sealedBases {
            let name = "/log/" + LogDirectory.name(base) + ".log"
            let a = try FileManager.default.attributesOfItem(atPath: dir + name)[.systemFileNumber] as? Int
            let b = try FileManager.default.attributesOfItem(atPath: copy + name)[.systemFileNumber] as? Int
            #expect(a != nil && a == b)
        }
    }

    @Test func damageInTheActiveSegmentIsKeptAsItIsAndTheCopyGoesOnPastIt() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir)
        var stored: [StoredReport] = []
        for n in 0..<20 { stored.append(try appendAndWait(store, draft(n))) }
        store.close()
        // A record damaged in the middle of the active segment, as a failing disk leaves it.
        let path = dir + "/reports.log"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[stored[4].recordEnd + 20] ^= 0xFF  // the sixth record, which begins where the fifth ends
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let copy = temporaryDirectory() + "/backup"
        let copied = try LogBackup.copy(from: dir, to: copy)
        // Kept, and everything after it: the copy is the log as it is, damage and all.
        #expect(copied.end == stored[19].recordEnd)
        let restored = try RecordLog(directory: copy)
        defer { restored.close() }
        #expect(restored.replay.corruptRecords.count == 1)
        #expect(all(restored).count == 19)
    }

    @Test func anEmptyOrFreshLogCopiesToAnEmptyLog() throws {
        let dir = temporaryDirectory()
        try RecordLog(directory: dir).close()
        let copy = temporaryDirectory() + "/backup"
        let copied = try LogBackup.copy(from: dir, to: copy)
        #expect(copied.end == 0 && copied.sealedBases.isEmpty)
        let restored = try RecordLog(directory: copy)
        defer { restored.close() }
        #expect(all(restored).isEmpty)
    }

    @Test func aRestoredLogGivesEveryKindIdsAboveItsFloorForGood() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        var store = try RecordLog(directory: dir, clock: clock.read)
        for n in 0..<5 { try appendAndWait(store, draft(n)) }
        store.close()
        let restore = try RecordLog.markRestored(directory: dir, at: clock.read())
        // A million ids a second since the epoch, and under 2^53 so that JSON keeps every digit.
        #expect(restore.floor == UInt64(clock.read().millisecondsSinceEpoch / 1000) << 20)
        #expect(restore.floor < 1 << 53)
        #expect(restore.nextIDs["1"] == 6)

        store = try RecordLog(directory: dir, clock: clock.read)
        let report = try appendAndWait(store, draft(5))
        #expect(report.id == restore.floor)
        store.close()
        // A kind that had no record yet starts above the floor too, after a restart.
        store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        let trigger = Locked<UInt64?>(nil)
        let done = DispatchSemaphore(value: 0)
        _ = store.append(kind: RecordKind.trigger, tag: 0, completion: { result in
            trigger.withLock { $0 = try? result.get().id }
            done.signal()
        }, payload: { $0.append(contentsOf: [1, 2, 3]) })
        done.wait()
        #expect((trigger.withLock { $0 } ?? 0) >= restore.floor)
        #expect(try appendAndWait(store, draft(6)).id == restore.floor + 1)
        #expect(store.restores == [restore])
    }

    @Test func aRestoreSealsTheActiveSegmentSoThatNoSegmentHoldsIdsFromBothSidesOfTheFloor() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        var store = try RecordLog(directory: dir, clock: clock.read)
        for n in 0..<5 { try appendAndWait(store, draft(n)) }
        store.close()
        let restore = try RecordLog.markRestored(directory: dir, at: clock.read())
        store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        for n in 5..<10 { try appendAndWait(store, draft(n)) }
        let segments = store.segments
        #expect(segments.count == 2)
        for segment in segments {
            var ids: [UInt64] = []
            _ = store.scanRecords(of: .report, from: segment.base, through: segment.end) { ids.append($0.id); return true }
            #expect(ids.allSatisfy { $0 < restore.floor } || ids.allSatisfy { $0 >= restore.floor }, "\(ids)")
            #expect(ids.count == 5)
        }
        // An empty log is not sealed: there is nothing on either side.
        let empty = temporaryDirectory()
        try RecordLog(directory: empty).close()
        _ = try RecordLog.markRestored(directory: empty, at: clock.read())
        let reopened = try RecordLog(directory: empty)
        defer { reopened.close() }
        #expect(reopened.segments.count == 1)
    }

    @Test func aSecondRestoreOfTheSameBackupNeverGoesBelowTheFirst() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        try RecordLog(directory: dir, clock: clock.read).close()
        let first = try RecordLog.markRestored(directory: dir, at: clock.read())
        // The clock set back: the floor still rises above the first restore's.
        let earlier = Timestamp(millisecondsSinceEpoch: clock.read().millisecondsSinceEpoch - 86_400_000)
        let second = try RecordLog.markRestored(directory: dir, at: earlier)
        #expect(second.floor >= first.floor)
        let store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        #expect(store.restores.count == 2)
        #expect(try appendAndWait(store, draft(1)).id >= first.floor)
    }
}
