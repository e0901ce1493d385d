import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import Locking
import Testing
@testable import PCMRecords
@testable import RecordLog

/// The `.owner` committer: nothing reaches the disk, and nobody is told it did, until the owner
/// calls `commitQueued()`; then everything queued goes in one flush, on the owner's thread.
@Suite struct OwnerCommitTests {
    @Test func nothingIsAcknowledgedUntilTheOwnerCommitsThenOneFlushTakesAll() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir, committer: .owner)
        let acknowledged = Locked<[(id: UInt64, onOwnerThread: Bool)]>([])
        let owner = pthread_self()
        for n in 0..<10 {
            store.append(draft(n)) { result in
                let onOwner = pthread_equal(pthread_self(), owner) != 0
                if case .success(let report) = result { acknowledged.withLock { $0.append((report.id, onOwner)) } }
            }
        }
        #expect(acknowledged.withLock { $0.isEmpty })
        #expect(store.count(of: .report) == 0 && store.bytesOnDisk == 0 && store.flushes == 0)

        store.commitQueued()
        let acks = acknowledged.withLock { $0 }
        #expect(acks.map(\.id) == Array(1...10))
        #expect(acks.allSatisfy { $0.onOwnerThread })
        #expect(store.count(of: .report) == 10 && store.flushes == 1)
        store.close()

        let reopened = try RecordLog(directory: dir)
        defer { reopened.close() }
        #expect(reopened.replay.records == 10)
        #expect(all(reopened).map(\.id) == Array(1...10))
    }

    @Test func whatACompletionQueuesIsCommittedBeforeCommitReturns() throws {
        // A completion that answers one request can let the connection read the next pipelined
        // one, which queues another report: it must not wait for some later commit.
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        defer { store.close() }
        let stored = Locked<[UInt64]>([])
        store.append(draft(1)) { result in
            if case .success(let first) = result { stored.withLock { $0.append(first.id) } }
            store.append(draft(2)) { result in
                if case .success(let second) = result { stored.withLock { $0.append(second.id) } }
            }
        }
        store.commitQueued()
        #expect(stored.withLock { $0 } == [1, 2])
        #expect(store.count(of: .report) == 2 && store.flushes == 2)
    }

    @Test func closeCommitsWhatTheOwnerLeftQueued() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir, committer: .owner)
        let result = Locked<Result<StoredReport, StoreError>?>(nil)
        store.append(draft(7)) { r in result.withLock { $0 = r } }
        store.close()
        #expect(try result.withLock { $0 }?.get().id == 1)

        let late = Locked<Result<StoredReport, StoreError>?>(nil)
        store.append(draft(8)) { r in late.withLock { $0 = r } }
        #expect(throws: StoreError.self) { _ = try late.withLock { $0 }?.get() }

        let reopened = try RecordLog(directory: dir)
        defer { reopened.close() }
        #expect(all(reopened).map(\.id) == [1])
    }

    @Test func commitsFromSeveralThreadsNeverOverlapOrLoseAReport() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir, committer: .owner)
        let ids = Locked<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { sender in
            for n in 0..<200 {
                store.append(draft(sender * 1000 + n)) { result in
                    if case .success(let report) = result { ids.withLock { $0.append(report.id) } }
                }
                if n % 7 == 0 { store.commitQueued() }
            }
            store.commitQueued()
        }
        #expect(Set(ids.withLock { $0 }).count == 800)
        #expect(store.count(of: .report) == 800)
        store.close()
        let reopened = try RecordLog(directory: dir)
        defer { reopened.close() }
        #expect(reopened.replay.records == 800 && reopened.replay.corruptRecords.isEmpty && reopened.replay.tornTailBytes == 0)
        #expect(all(reopened).map(\.id) == Array(1...800))
    }
    /// What the endpoint's event loop relies on to prepare answers during the flush: with
    /// `overlappingFlush`, every record is told `written` before the batch is durable (the store
    /// has not counted it yet) and before any is told `stored`; without it, each is told `written`
    /// after the flush, just before `stored`. Either way once each, with the same id and time.
    @Test func writtenStepsRunDuringTheFlushOnlyWhenTheOwnerAsks() throws {
        for overlapping in [true, false] {
            let dir = temporaryDirectory()
            let store = try RecordLog(directory: dir, committer: .owner)
            // (step, id, receivedAt, reports the store counted as durable at that moment)
            let events = Locked<[(step: String, id: UInt64, at: Timestamp, durable: Int)]>([])
            for n in 0..<5 {
                store.append(draft(n)) { step in
                    switch step {
                    case .written(let record):
                        events.withLock { $0.append(("written", record.id, record.time, store.count(of: .report))) }
                    case .stored(let record):
                        events.withLock { $0.append(("stored", record.id, record.time, store.count(of: .report))) }
                    case .failed:
                        events.withLock { $0.append(("failed", 0, Timestamp(millisecondsSinceEpoch: 0), store.count(of: .report))) }
                    }
                }
            }
            store.commitQueued(overlappingFlush: overlapping)
            let got = events.withLock { $0 }
            if overlapping {
                #expect(got.map(\.step) == Array(repeating: "written", count: 5) + Array(repeating: "stored", count: 5))
                #expect(got.prefix(5).allSatisfy { $0.durable == 0 })
            } else {
                #expect(got.map(\.step) == Array(["written", "stored"].repeated(5)))
                #expect(got.allSatisfy { $0.durable == 5 })
            }
            #expect(got.filter { $0.step == "written" }.map(\.id) == Array(1...5))
            for id in UInt64(1)...5 {
                let pair = got.filter { $0.id == id }
                #expect(pair.count == 2 && pair[0].at == pair[1].at)
            }
            #expect(store.count(of: .report) == 5 && store.flushes == 1)
            store.close()
            let reopened = try RecordLog(directory: dir)
            #expect(all(reopened).map(\.id) == Array(1...5))
            reopened.close()
        }
    }

    @Test func aRecordThatIsNeverWrittenIsNeverToldWritten() throws {
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        store.close()
        let steps = Locked<[String]>([])
        store.append(draft(1)) { step in
            switch step {
            case .written: steps.withLock { $0.append("written") }
            case .stored: steps.withLock { $0.append("stored") }
            case .failed: steps.withLock { $0.append("failed") }
            }
        }
        store.commitQueued(overlappingFlush: true)
        #expect(steps.withLock { $0 } == ["failed"])
    }
}

private extension Array {
    func repeated(_ times: Int) -> [Element] { (0..<times).flatMap { _ in self } }
}
