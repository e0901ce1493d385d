import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import Locking
import Testing
@testable import PCMRecords
@testable import RecordLog

@discardableResult
private func appendTriggerAndWait(_ store: RecordLog, site: String = "shop.example", data: UInt8 = 5,
                                  source: String? = "news.example") throws -> Trigger {
    let done = DispatchSemaphore(value: 0)
    let result = Locked<Result<Trigger, StoreError>?>(nil)
    store.appendTrigger(site: site, triggerData: data, priority: 40, attributionSource: source) { r in
        result.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

@Suite struct TriggerRecordTests {
    @Test func triggersShareTheLogAndComeBackOnReplayWithTheTriggersReportsUsed() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        var store = try RecordLog(directory: dir, clock: clock.read)
        let first = try appendTriggerAndWait(store)
        clock.advance(milliseconds: 1000)
        let second = try appendTriggerAndWait(store, site: "news.example", data: 9, source: nil)
        var used = draft(1, role: .destination)
        used.triggerID = first.id
        used.campaign = "Winter sale"
        let stored = try appendAndWait(store, used)
        try appendAndWait(store, draft(2))
        #expect(first.id == 1 && second.id == 2)
        #expect(stored.triggerID == 1)
        // Reports only: triggers are not reports, in the count or the export.
        #expect(store.count(of: .report) == 2)
        #expect(all(store).map(\.id) == [1, 2])
        store.close()

        var replayed = ReplayedTriggers()
        store = try RecordLog(directory: dir, clock: clock.read, replaying: { replayed.take($0) })
        defer { store.close() }
        #expect(replayed.triggers == [first, second])
        #expect(replayed.consumed == [1])
        let reports = all(store)
        #expect(reports[0].triggerID == 1)
        #expect(reports[0].campaign == "Winter sale")
        #expect(reports[1].triggerID == nil && reports[1].campaign == nil)
        // Ids continue after a reopen.
        #expect(try appendTriggerAndWait(store).id == 3)
        #expect(try appendAndWait(store, draft(3)).id == 3)
    }

    @Test func aTornTriggerRecordIsCutLikeAnyOther() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir)
        try appendAndWait(store, draft(1))
        let cut = store.bytesOnDisk
        try appendTriggerAndWait(store)
        store.close()
        let path = dir + "/reports.log"
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        for end in cut..<full.count {
            try full.prefix(end).write(to: URL(fileURLWithPath: path))
            var replayed = ReplayedTriggers()
            let reopened = try RecordLog(directory: dir, replaying: { replayed.take($0) })
            #expect(replayed.triggers.isEmpty)
            #expect(reopened.replay.tornTailBytes == end - cut)
            #expect(all(reopened).count == 1)
            reopened.close()
        }
    }
}
