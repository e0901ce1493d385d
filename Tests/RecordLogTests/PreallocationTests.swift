import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import Locking
import Testing
@testable import PCMRecords
@testable import RecordLog

private func fileSize(_ dir: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: dir + "/reports.log")[.size] as? NSNumber)?.intValue ?? -1
}

/// Waits (bounded) until the preallocator, on a thread of its own, has written the file to at
/// least `size` bytes: each piece it writes wakes the wait.
private func waitForFile(_ store: RecordLog, _ dir: String, atLeast size: Int) throws -> Bool {
    guard let preallocator = store.committing.withLock({ $0.writer.preallocator }) else { return false }
    guard preallocator.waitUntilZeroed(through: size, seconds: 60) else { return false }
    return try fileSize(dir) >= size
}

/// Zeros kept ahead of the log's end (`LogPreallocator`): never where a record is, free space on
/// replay, gone when the store is opened without them.
@Suite struct PreallocationTests {
    @Test func zerosAheadOfTheDataAreFreeSpaceOnReplayAndAppendsContinueAtTheData() throws {
        let dir = temporaryDirectory()
        var store = try RecordLog(directory: dir, preallocation: 256 << 10)
        for n in 0..<20 { try appendAndWait(store, draft(n)) }
        let dataEnd = store.bytesOnDisk
        #expect(try waitForFile(store, dir, atLeast: dataEnd + 128 << 10))
        store.close()
        #expect(try fileSize(dir) > dataEnd)

        store = try RecordLog(directory: dir, preallocation: 256 << 10)
        #expect(store.replay.records == 20)
        #expect(store.replay.tornTailBytes == 0 && store.replay.corruptRecords.isEmpty)
        #expect(store.bytesOnDisk == dataEnd)
        #expect(try appendAndWait(store, draft(99)).id == 21)
        store.close()

        // Opened without preallocation, the zeros are cut off and nothing else changes.
        store = try RecordLog(directory: dir)
        defer { store.close() }
        #expect(all(store).map(\.id) == Array(1...21))
        #expect(store.replay.tornTailBytes == 0)
        #expect(try fileSize(dir) == store.bytesOnDisk)
    }

    @Test func aTornLastRecordBeforeTheZerosIsCutLikeAnyOther() throws {
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir, preallocation: 128 << 10)
        for n in 0..<3 { try appendAndWait(store, draft(n)) }
        let lastStart = store.bytesOnDisk
        try appendAndWait(store, draft(3))
        let dataEnd = store.bytesOnDisk
        #expect(try waitForFile(store, dir, atLeast: dataEnd + 64 << 10))
        store.close()
        // The crash wrote the last record's first half: the rest of it is still zeros.
        let path = dir + "/reports.log"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let half = lastStart + (dataEnd - lastStart) / 2
        bytes.replaceSubrange(half..<dataEnd, with: Data(count: dataEnd - half))
        try bytes.write(to: URL(fileURLWithPath: path))

        let reopened = try RecordLog(directory: dir, preallocation: 128 << 10)
        defer { reopened.close() }
        #expect(reopened.replay.records == 3)
        #expect(reopened.replay.tornTailBytes > 0)
        #expect(reopened.bytesOnDisk == lastStart)
        #expect(try appendAndWait(reopened, draft(7)).id == 4)
        #expect(all(reopened).map(\.id) == [1, 2, 3, 4])
    }

    @Test func aCommitWaitsForZerosBeingWrittenWhereItWantsToWrite() throws {
        let path = temporaryDirectory() + "/log"
        let file = try LogFile.open(path: path)
        defer { file.close() }
        let zeroing = DispatchSemaphore(value: 0), goOn = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
        // Nothing is zeroed yet, so the thread starts on [0, 8192) at once; the hook holds it there.
        let preallocator = LogPreallocator(file: file, window: 8192, dataEnd: 0, zeroedEnd: 0) { _ in
            zeroing.signal()
            goOn.wait()
        }
        zeroing.wait()
        let record = [UInt8](repeating: 0xA7, count: 100)
        Thread.detachNewThread {
            preallocator.claim(0..<100)
            try? file.write(record, at: 0)
            written.signal()
        }
        // The commit must not get past `claim` while the zeros for its range are being written.
        let waited = written.wait(timeout: .now() + 0.3) == .timedOut
        #expect(waited)
        goOn.signal()
        if waited { written.wait() }
        preallocator.stop()
        var back = [UInt8](repeating: 0, count: 100)
        _ = try back.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        #expect(back == record)
    }

    @Test func zerosNeverOverwriteARecordWhileManyCommitsRace() throws {
        // A window of a few records, so the thread writes zeros all the time, right behind the
        // commits: every record must come back whole.
        let dir = temporaryDirectory()
        let store = try RecordLog(directory: dir, preallocation: 2 << 10)
        let done = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 4) { sender in
            for n in 0..<1000 {
                done.enter()
                store.append(draft(sender * 1000 + n), completion: { _ in done.leave() })
            }
        }
        done.wait()
        store.close()
        let reopened = try RecordLog(directory: dir)
        defer { reopened.close() }
        #expect(reopened.replay.records == 4000)
        #expect(reopened.replay.corruptRecords.isEmpty && reopened.replay.tornTailBytes == 0)
        #expect(all(reopened).map(\.id) == Array(1...4000))
    }
}
