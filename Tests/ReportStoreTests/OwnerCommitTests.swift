import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import Locking
import Testing
@testable import PCMRecords
@testable import ReportStore

/// The `.owner` committer: nothing reaches the disk, and nobody is told it did, until the owner
/// calls `commitQueued()`; then everything queued goes in one flush, on the owner's thread.
@Suite struct OwnerCommitTests {
    @Test func nothingIsAcknowledgedUntilTheOwnerCommitsThenOneFlushTakesAll() throws {
        let dir = temporaryDirectory()
        let store = try ReportStore(directory: dir, committer: .owner)
        let acknowledged = Locked<[(id: UInt64, onOwnerThread: Bool)]>([])
        let owner = pthread_self()
        for n in 0..<10 {
            store.append(draft(n)) { result in
                let onOwner = pthread_equal(pthread_self(), owner) != 0
                if case .success(let report) = result { acknowledged.withLock { $0.append((report.id, onOwner)) } }
            }
        }
        #expect(acknowledged.withLock { $0.isEmpty })
        #expect(store.count == 0 && store.bytesOnDisk == 0 && store.flushes == 0)

        store.commitQueued()
        let acks = acknowledged.withLock { $0 }
        #expect(acks.map(\.id) == Array(1...10))
        #expect(acks.allSatisfy { $0.onOwnerThread })
        #expect(store.count == 10 && store.flushes == 1)
        store.close()

        let reopened = try ReportStore(directory: dir)
        defer { reopened.close() }
        #expect(reopened.replay.records == 10)
        #expect(all(reopened).map(\.id) == Array(1...10))
    }

    @Test func whatACompletionQueuesIsCommittedBeforeCommitReturns() throws {
        // A completion that answers one request can let the connection read the next pipelined
        // one, which queues another report: it must not wait for some later commit.
        let store = try ReportStore(directory: temporaryDirectory(), committer: .owner)
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
        #expect(store.count == 2 && store.flushes == 2)
    }

    @Test func closeCommitsWhatTheOwnerLeftQueued() throws {
        let dir = temporaryDirectory()
        let store = try ReportStore(directory: dir, committer: .owner)
        let result = Locked<Result<StoredReport, StoreError>?>(nil)
        store.append(draft(7)) { r in result.withLock { $0 = r } }
        store.close()
        #expect(try result.withLock { $0 }?.get().id == 1)

        let late = Locked<Result<StoredReport, StoreError>?>(nil)
        store.append(draft(8)) { r in late.withLock { $0 = r } }
        #expect(throws: StoreError.self) { _ = try late.withLock { $0 }?.get() }

        let reopened = try ReportStore(directory: dir)
        defer { reopened.close() }
        #expect(all(reopened).map(\.id) == [1])
    }

    @Test func commitsFromSeveralThreadsNeverOverlapOrLoseAReport() throws {
        let dir = temporaryDirectory()
        let store = try ReportStore(directory: dir, committer: .owner)
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
        #expect(store.count == 800)
        store.close()
        let reopened = try ReportStore(directory: dir)
        defer { reopened.close() }
        #expect(reopened.replay.records == 800 && reopened.replay.corruptRecords.isEmpty && reopened.replay.tornTailBytes == 0)
        #expect(all(reopened).map(\.id) == Array(1...800))
    }
}
