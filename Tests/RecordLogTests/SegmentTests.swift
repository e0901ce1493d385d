import Foundation
import Primitives
import Testing
@testable import PCMRecords
@testable import RecordLog

private let day: Int64 = 86_400_000

private func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

private func sealedNames(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/log")) ?? []).sorted()
}

/// Three days of reports, `perDay` a day, one segment a day.
private func threeDays(_ dir: String, perDay: Int = 5, clock: TestClock = TestClock(), policy: SegmentPolicy = SegmentPolicy()) throws -> [StoredReport] {
    let store = try RecordLog(directory: dir, segments: policy, clock: clock.read)
    defer { store.close() }
    var stored: [StoredReport] = []
    for d in 0..<3 {
        for n in 0..<perDay { stored.append(try appendAndWait(store, draft(d * 100 + n))) }
        clock.advance(milliseconds: day)
    }
    return stored
}

/// The log in segments (`LogSegment`): rolled at a UTC day and at a size, read across, sealed
/// segments taken from their index at a start, removed whole, and crashes at every step of a roll.
@Suite struct SegmentTests {
    @Test func eachUTCDayBeginsASegmentAndEveryReadCrossesThem() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        let stored = try threeDays(dir, clock: clock)
        #expect(sealedNames(dir).count == 4)  // two sealed segments and their indexes
        let store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        let segments = store.segments
        #expect(segments.count == 3)
        #expect(segments.map(\.records) == [5, 5, 5])
        #expect(segments.map(\.sealed) == [true, true, false])
        // Offsets run on from one segment into the next.
        #expect(segments[0].base == 0 && segments[1].base == segments[0].end && segments[2].base == segments[1].end)
        #expect(segments[2].end == store.bytesOnDisk)
        #expect(all(store).map(\.id) == stored.map(\.id))
        #expect(all(store).map(\.body) == stored.map(\.body))
        // since/until pick the middle day, which is the middle segment, by time.
        let middle = all(store, since: stored[5].receivedAt, until: stored[10].receivedAt)
        #expect(middle.map(\.id) == Array(6...10))
        #expect(store.count(of: .report) == 15)
        // Ids and times go on from the log's end.
        let next = try appendAndWait(store, draft(1000))
        #expect(next.id == 16)
        #expect(next.recordEnd > segments[2].end)
        // The segment of the first day is the first file as it always was: no header.
        let first = try bytes(dir + "/log/00000000000000000000.log")
        #expect(first.count == segments[0].end)
        #expect(first[0] == 0x7E && first[1] == 0xA7)
        // The others start with one.
        #expect(Array(try bytes(dir + "/reports.log")[0..<8]) == Array("ATTRSEG1".utf8))
    }

    @Test func aStartTakesSealedSegmentsFromTheirIndexAndReadsOnlyTheRest() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        let stored = try threeDays(dir, perDay: 2_500, clock: clock)
        // The last record of the second day ends where the active segment begins.
        let tail = stored[4_999].recordEnd
        var seen: [UInt64] = []
        let store = try RecordLog(directory: dir, clock: clock.read, replayFrom: tail) { record in
            if record.kind == RecordKind.report.number { seen.append(record.id) }
        }
        defer { store.close() }
        // Only the active segment was read and shown; the rest came from two indexes.
        #expect(seen == Array(5_001...7_500))
        #expect(store.replay.recordsRead == 2_500)
        #expect(store.replay.records == 7_500)
        // The time index came from them too: the second day, by time.
        #expect(all(store, since: stored[2_500].receivedAt, until: stored[5_000].receivedAt).map(\.id) == Array(2_501...5_000))

        // A start that reads everything finds the same log.
        let full = try RecordLog(directory: temporaryCopy(dir), clock: clock.read)
        defer { full.close() }
        #expect(full.replay.recordsRead == 7_500)
        #expect(full.durablePrefix == store.durablePrefix)
        #expect(full.segments == store.segments)
        #expect(try appendAndWait(store, draft(1)).id == 7_501)
    }

    @Test func aDamagedOrForeignIndexIsNeverTrusted() throws {
        let dir = temporaryDirectory()
        let stored = try threeDays(dir)
        let index = dir + "/log/00000000000000000000.index"
        var damaged = try bytes(index)
        damaged[20] ^= 0x01
        try Data(damaged).write(to: URL(fileURLWithPath: index))
        // The middle segment's index put beside the first: its layout is not the segment's.
        let middle = sealedNames(dir).first { $0.hasSuffix(".index") && !$0.hasPrefix("00000000000000000000") }!
        let foreign = try bytes(dir + "/log/" + middle)
        let store = try RecordLog(directory: dir, replayFrom: .max)
        #expect(store.replay.recordsRead == 5 + 5)  // the first segment (damaged index) and the active one
        #expect(all(store).map(\.id) == stored.map(\.id))
        store.close()
        // The index was written again, whole.
        #expect(SegmentIndex.decode(try bytes(index)) != nil)

        try Data(foreign).write(to: URL(fileURLWithPath: index))
        let again = try RecordLog(directory: dir, replayFrom: .max)
        defer { again.close() }
        #expect(again.replay.recordsRead == 10)
        #expect(all(again).count == 15)
    }

    @Test func aSizeRollsTooAndABatchLargerThanASegmentStillGoesWhole() throws {
        let dir = temporaryDirectory()
        let policy = SegmentPolicy(maxBytes: 2_000, rollsDaily: false)
        let store = try RecordLog(directory: dir, segments: policy)
        var stored: [StoredReport] = []
        for n in 0..<40 { stored.append(try appendAndWait(store, draft(n))) }
        let segments = store.segments
        #expect(segments.count == 4)  // about 190 bytes a record: nine fit under 2,000, the tenth rolls
        for segment in segments.dropLast() { #expect(segment.end - segment.base <= 2_000) }
        #expect(segments.map(\.records).reduce(0, +) == 40)
        store.close()
        var visited: [UInt64] = []
        let reopened = try RecordLog(directory: dir, committer: .owner, segments: policy, replaying: { visited.append($0.id) })
        defer { reopened.close() }
        #expect(visited == stored.map(\.id))
        #expect(reopened.segments == segments)

        // Twenty records committed together are one write to one segment, whatever its size.
        for n in 0..<20 { reopened.append(draft(n), completion: { _ in }) }
        reopened.commitQueued()
        let big = reopened.segments.last!
        #expect(big.records == 20 && big.end - big.base > 2_000)
        #expect(reopened.segments.count == 5)
    }

    @Test func aTornTailInTheActiveSegmentIsCutAndSealedOnesAreNotTouched() throws {
        let dir = temporaryDirectory()
        let stored = try threeDays(dir, perDay: 3)
        let sealedBefore = try sealedNames(dir).map { try bytes(dir + "/log/" + $0) }
        let active = try bytes(dir + "/reports.log")
        let lastStart = stored[7].recordEnd
        let headerLength = active.count - (stored[8].recordEnd - stored[6].recordEnd)
        let lastFileStart = headerLength + (lastStart - stored[6].recordEnd)
        for cut in stride(from: lastFileStart + 1, to: active.count, by: 7) {
            try Data(active[0..<cut]).write(to: URL(fileURLWithPath: dir + "/reports.log"))
            let store = try RecordLog(directory: dir)
            #expect(store.replay.tornTailBytes == cut - lastFileStart)
            #expect(all(store).map(\.id) == Array(1...8))
            store.close()
        }
        #expect(try sealedNames(dir).map { try bytes(dir + "/log/" + $0) } == sealedBefore)
    }

    @Test func aRollCutShortByACrashIsFinishedOrUndoneAtTheNextStart() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        let stored = try threeDays(dir, clock: clock)

        // Crashed after making the successor: the roll never happened.
        try Data(Array("ATTRSEG1".utf8)).write(to: URL(fileURLWithPath: dir + "/reports.log.next"))
        var store = try RecordLog(directory: dir, clock: clock.read)
        #expect(!exists(dir + "/reports.log.next"))
        #expect(all(store).map(\.id) == stored.map(\.id))
        store.close()

        // Crashed after the old one was renamed: the successor takes the name.
        let active = store.segments.last!
        let base = active.end
        try FileManager.default.moveItem(atPath: dir + "/reports.log", toPath: dir + "/log/" + LogDirectory.name(active.base) + ".log")
        let header = SegmentHeader(base: base, prefix: store.durablePrefix, lastTime: stored.last!.receivedAt.millisecondsSinceEpoch,
                                   nextIDs: [RecordKind.report.number: 16])
        try Data(header.encoded()).write(to: URL(fileURLWithPath: dir + "/reports.log.next"))
        store = try RecordLog(directory: dir, clock: clock.read)
        #expect(store.segments.count == 4)
        #expect(all(store).map(\.id) == stored.map(\.id))
        #expect(try appendAndWait(store, draft(7)).id == 16)
        store.close()

        // Crashed before the successor was made at all: a new active segment starts where the sealed ones end.
        try FileManager.default.removeItem(atPath: dir + "/reports.log")
        store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        #expect(store.segments.last!.base == store.segments.dropLast().last!.end)
        #expect(try appendAndWait(store, draft(8)).id == 16)
    }

    @Test func aMissingSegmentOrAHeaderlessActiveAfterSealedOnesRefusesToStart() throws {
        let dir = temporaryDirectory()
        _ = try threeDays(dir)
        let middle = sealedNames(dir).filter { $0.hasSuffix(".log") }[1]
        let saved = try bytes(dir + "/log/" + middle)
        try FileManager.default.removeItem(atPath: dir + "/log/" + middle)
        #expect(throws: StoreError.self) { try RecordLog(directory: dir) }
        try Data(saved).write(to: URL(fileURLWithPath: dir + "/log/" + middle))

        var active = try bytes(dir + "/reports.log")
        active[0] = 0x00
        try Data(active).write(to: URL(fileURLWithPath: dir + "/reports.log"))
        #expect(throws: StoreError.self) { try RecordLog(directory: dir) }
    }

    @Test func removedSegmentsAreGoneFromEveryReadAndTheRestKeepTheirOffsets() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        let stored = try threeDays(dir, clock: clock)
        var store = try RecordLog(directory: dir, clock: clock.read)
        let prefix = store.durablePrefix
        // A reader that may still open the first segment pins it, and what comes after: nothing
        // it may read goes under it.
        let early = store.reports(since: nil, until: nil)
        #expect(early.next()?.id == 1)
        #expect(store.removeSegments { _ in true }.isEmpty)
        var rest: [UInt64] = []
        while let r = early.next() { rest.append(r.id) }
        #expect(rest == Array(2...15))
        // Done reading, it lets them go.
        let removed = store.removeSegments { $0.lastTime!.millisecondsSinceEpoch < stored[5].receivedAt.millisecondsSinceEpoch }
        #expect(removed.map(\.records) == [5])
        #expect(!exists(dir + "/log/00000000000000000000.log") && !exists(dir + "/log/00000000000000000000.index"))
        #expect(String(decoding: try bytes(dir + "/log/START"), as: UTF8.self) == "\(stored[4].recordEnd)\n")
        #expect(all(store).map(\.id) == Array(6...15))
        // The count is of records the log has held, as the export's lag needs; `segments` has the kept.
        #expect(store.count(of: .report) == 15)
        #expect(store.segments.map(\.records) == [5, 5])
        #expect(store.scanRecords(of: .report, from: 0, through: store.bytesOnDisk) { _ in true } == store.bytesOnDisk)
        // Never the active segment, and never past a segment kept.
        #expect(store.removeSegments { _ in true }.count == 1)
        #expect(store.segments.count == 1 && !store.segments[0].sealed)
        store.close()

        // A start from a log whose first segments are gone: offsets, ids and the fingerprint go on.
        store = try RecordLog(directory: dir, fingerprintAt: stored[14].recordEnd, clock: clock.read)
        defer { store.close() }
        #expect(store.replay.start == stored[9].recordEnd)
        #expect(store.replay.prefixAtFingerprint == prefix)
        #expect(store.durablePrefix == prefix)
        #expect(all(store).map(\.id) == Array(11...15))
        #expect(store.count(of: .report) == 15 && store.replay.records == 5)
        #expect(try appendAndWait(store, draft(9)).id == 16)
    }

    @Test func aRollThatCannotBeMadeLeavesTheActiveSegmentTakingRecordsAndTouchesNothingElse() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        var store = try RecordLog(directory: dir, clock: clock.read)
        for n in 0..<3 { try appendAndWait(store, draft(n)) }
        // Something else's file where the successor would be made: never reused, never removed.
        let foreign = Array("not ours".utf8)
        try Data(foreign).write(to: URL(fileURLWithPath: dir + "/reports.log.next"))
        clock.advance(milliseconds: day)
        #expect(try appendAndWait(store, draft(3)).id == 4)
        #expect(store.rollFailures.count == 1)
        #expect(store.segments.count == 1 && store.segments[0].records == 4)
        #expect(try bytes(dir + "/reports.log.next") == foreign)
        store.close()
        // A start finds both files: no roll happened, the stray one goes; the next batch rolls.
        store = try RecordLog(directory: dir, clock: clock.read)
        #expect(!exists(dir + "/reports.log.next"))
        #expect(try appendAndWait(store, draft(4)).id == 5)
        #expect(store.segments.map(\.records) == [4, 1])
        store.close()

        // `log/` a file: the roll fails, the record is kept, and a start refuses what it cannot list.
        clock.advance(milliseconds: day)
        store = try RecordLog(directory: dir, clock: clock.read)
        let sealed = sealedNames(dir)
        let saved = try sealed.map { try bytes(dir + "/log/" + $0) }
        try FileManager.default.removeItem(atPath: dir + "/log")
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/log"))
        #expect(try appendAndWait(store, draft(5)).id == 6)
        #expect(store.rollFailures.count == 1)
        #expect(store.segments.map(\.records) == [4, 2])
        store.close()
        #expect(throws: StoreError.self) { try RecordLog(directory: dir, clock: clock.read) }
        try FileManager.default.removeItem(atPath: dir + "/log")
        try FileManager.default.createDirectory(atPath: dir + "/log", withIntermediateDirectories: false)
        for (name, content) in zip(sealed, saved) { try Data(content).write(to: URL(fileURLWithPath: dir + "/log/" + name)) }
        store = try RecordLog(directory: dir, clock: clock.read)
        defer { store.close() }
        #expect(all(store).map(\.id) == Array(1...6))
    }

    @Test func damageInASealedSegmentIsSkippedAndReportedAndTheLogGoesOn() throws {
        let dir = temporaryDirectory()
        let stored = try threeDays(dir)
        let before = try RecordLog(directory: dir)
        let prefix = before.durablePrefix
        before.close()
        // A byte of the third record of the first day, and one of the last record of the second.
        let first = dir + "/log/00000000000000000000.log"
        var firstBytes = try bytes(first)
        firstBytes[stored[2].recordEnd - 3] ^= 0xFF
        try Data(firstBytes).write(to: URL(fileURLWithPath: first))
        let second = dir + "/log/" + LogDirectory.name(stored[4].recordEnd) + ".log"
        var secondBytes = try bytes(second)
        secondBytes[secondBytes.count - 3] ^= 0xFF
        try Data(secondBytes).write(to: URL(fileURLWithPath: second))

        let store = try RecordLog(directory: dir, fingerprintAt: prefix.end)
        defer { store.close() }
        #expect(store.replay.corruptRecords.map(\.offset) == [stored[1].recordEnd, stored[8].recordEnd])
        #expect(all(store).map(\.id) == [1, 2, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15])
        // What was derived from the log before the damage no longer matches it.
        #expect(store.replay.prefixAtFingerprint != nil && store.replay.prefixAtFingerprint != prefix)
        #expect(try appendAndWait(store, draft(0)).id == 16)
    }

    @Test func aLogThatBeginsLaterThanRetentionLeftItRefusesToStart() throws {
        let dir = temporaryDirectory()
        let stored = try threeDays(dir)
        let copy = try temporaryCopy(dir)
        // A restore that brought back reports.log without log/.
        try FileManager.default.removeItem(atPath: copy + "/log")
        #expect(throws: StoreError.self) { try RecordLog(directory: copy) }

        var store = try RecordLog(directory: dir)
        #expect(store.removeSegments { $0.base == 0 }.count == 1)
        store.close()
        store = try RecordLog(directory: dir)
        #expect(all(store).map(\.id) == Array(6...15))
        store.close()
        // A segment removed by hand, not by retention.
        let middle = dir + "/log/" + LogDirectory.name(stored[4].recordEnd)
        try FileManager.default.removeItem(atPath: middle + ".log")
        try FileManager.default.removeItem(atPath: middle + ".index")
        #expect(throws: StoreError.self) { try RecordLog(directory: dir) }
    }

    @Test func aStartThatReadsASealedSegmentLeavesItsGoodIndexAlone() throws {
        let dir = temporaryDirectory()
        _ = try threeDays(dir)
        let index = dir + "/log/00000000000000000000.index"
        let written = try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date
        let inode = try FileManager.default.attributesOfItem(atPath: index)[.systemFileNumber] as? Int
        let store = try RecordLog(directory: dir)  // reads every record: nothing taken from indexes
        store.close()
        #expect(store.replay.recordsRead == 15)
        #expect(try FileManager.default.attributesOfItem(atPath: index)[.modificationDate] as? Date == written)
        #expect(try FileManager.default.attributesOfItem(atPath: index)[.systemFileNumber] as? Int == inode)
    }

    @Test func rollingKeepsZerosOnlyAheadOfTheActiveSegment() throws {
        let dir = temporaryDirectory()
        let clock = TestClock()
        let store = try RecordLog(directory: dir, preallocation: 256 << 10, clock: clock.read)
        defer { store.close() }
        for n in 0..<3 { try appendAndWait(store, draft(n)) }
        clock.advance(milliseconds: day)
        try appendAndWait(store, draft(3))
        let sealed = store.segments[0]
        #expect(try bytes(dir + "/log/00000000000000000000.log").count == sealed.end)
        #expect(try appendAndWait(store, draft(4)).id == 5)
        #expect(all(store).count == 5)
    }
}

/// A copy of a data directory, for opening the same log twice.
func temporaryCopy(_ dir: String) throws -> String {
    let copy = temporaryDirectory()
    try FileManager.default.removeItem(atPath: copy)
    try FileManager.default.copyItem(atPath: dir, toPath: copy)
    return copy
}

/// What a start reads besides records, from a disk anyone may have written to: a segment's
/// header, a sealed segment's index, `log/START`. Damage of every kind is refused, never trapped on.
@Suite struct SegmentFileHostileTests {
    @Test func everyCutAndEveryFlippedByteOfAnIndexIsRefusedOrReadWhole() throws {
        let dir = temporaryDirectory()
        _ = try threeDays(dir, perDay: 1_100)  // more than one time-index entry per segment
        let good = try bytes(dir + "/log/00000000000000000000.index")
        let index = try #require(SegmentIndex.decode(good))
        for cut in 0..<good.count { #expect(SegmentIndex.decode(Array(good[0..<cut])) == nil) }
        for i in good.indices {
            var damaged = good
            damaged[i] ^= 0x5A
            #expect(SegmentIndex.decode(damaged) == nil, "byte \(i)")
        }
        // Valid checksums over absurd numbers: counts and offsets past 2^62, entries said to be billions.
        for offset in [8, 12, 20, 28] {
            var absurd = Array(good.dropLast(4))
            for j in 0..<8 { absurd[offset + j] = 0xFF }
            absurd.appendLE(absurd.withUnsafeBytes { CRC32C.checksum($0) })
            #expect(SegmentIndex.decode(absurd) == nil, "field at \(offset)")
        }
        #expect(index.entries.count >= 2)
    }

    @Test func aHeaderCutFlippedOrAbsurdIsDamageAndTheStoreRefusesOrRecovers() throws {
        let dir = temporaryDirectory()
        _ = try threeDays(dir)
        let header = try bytes(dir + "/reports.log")
        let length = Int(header.withUnsafeBytes { $0.loadLE(UInt32.self, at: 8) })
        let file = dir + "/probe"
        func read(_ bytes: [UInt8]) throws -> SegmentHeader.Read {
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let log = try LogFile.open(path: file, create: false)
            defer { log.close() }
            return try SegmentHeader.read(log)
        }
        for cut in 8..<length { #expect(try read(Array(header[0..<cut])) == .damaged, "cut at \(cut)") }
        for i in 8..<length {
            var damaged = Array(header[0..<length])
            damaged[i] ^= 0x01
            #expect(try read(damaged) == .damaged, "byte \(i)")
        }
        // A checksum that holds over a base of 2^63: refused, not added to.
        var absurd = Array(header[0..<length - 4])
        for j in 0..<8 { absurd[12 + j] = 0xFF }
        absurd.appendLE(absurd.withUnsafeBytes { CRC32C.checksum($0) })
        #expect(try read(absurd) == .damaged)
        // The active segment with a damaged header and records after it: refused, with its path named.
        var active = header
        active[20] ^= 0x01
        try Data(active).write(to: URL(fileURLWithPath: dir + "/reports.log"))
        #expect(throws: StoreError.self) { try RecordLog(directory: dir) }
    }

    @Test func startThatIsNotAnOffsetRefusesToStart() throws {
        for text in ["", "abc", "-1", "99999999999999999999999", "4611686018427387905", "1e9", "\u{0}"] {
            let dir = temporaryDirectory()
            _ = try threeDays(dir, perDay: 1)
            try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/log/START"))
            #expect(throws: StoreError.self, "\(text.debugDescription)") { try RecordLog(directory: dir) }
        }
    }
}
