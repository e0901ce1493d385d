import PCM
import Primitives
import SiteOwners
import Foundation
import Testing
@testable import PCMRecords
@testable import RecordLog

/// Every record's header names its protocol; the store keeps the byte and hands it back.
@Suite struct RecordProtocolTests {
    private func tags(_ path: String) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var tags: [UInt8] = [], offset = 0
        while offset + LogRecord.headerSize <= bytes.count, bytes[offset] != 0 {
            tags.append(bytes[offset + 3])
            offset += LogRecord.headerSize + Int(UInt32(bytes[offset + 4]) | UInt32(bytes[offset + 5]) << 8 | UInt32(bytes[offset + 6]) << 16)
        }
        return tags
    }

    @Test func recordsCarryTheirProtocolAndUntaggedOnesArePCM() throws {
        let dir = temporaryDirectory()
        var store = try RecordLog(directory: dir)
        try appendAndWait(store, draft(1))
        store.close()
        #expect(try tags(dir + "/reports.log") == [AttributionProtocol.pcm.rawValue])

        // The same record as a release before the tag wrote it: byte 3 zero, checksum to match.
        var old: [UInt8] = []
        var record = draft(2)
        record.protocol = .pcm
        LogRecord.append(kind: .report, tag: 0, to: &old) {
            $0.appendLE(UInt64(2))
            $0.appendLE(Int64(1_795_168_800_000))
            StoredReport.encodePayload(record, into: &$0)
        }
        // And one of a protocol this release does not know (a later release's).
        LogRecord.append(kind: .report, tag: 200, to: &old) {
            $0.appendLE(UInt64(3))
            $0.appendLE(Int64(1_795_168_800_001))
            StoredReport.encodePayload(draft(3), into: &$0)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/reports.log"))
        try log.seekToEnd()
        try log.write(contentsOf: Data(old))
        try log.close()

        store = try RecordLog(directory: dir)
        defer { store.close() }
        #expect(store.replay.corruptRecords.isEmpty && store.replay.tornTailBytes == 0, "a tag is not damage")
        let reports = all(store)
        #expect(reports.map(\.id) == [1, 2], "the unknown protocol's record is kept in the log but not read as PCM")
        #expect(reports.allSatisfy { $0.protocol == .pcm })
        #expect(try tags(dir + "/reports.log") == [1, 0, 200])
    }
}
