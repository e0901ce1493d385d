import PCM
import Primitives
import SiteOwners
import Foundation
import PCMRecords
import RecordLog
import Testing
import RawHTTPClient
@testable import Demo
@testable import Endpoint

/// What a marketer sees, in every form the API gives it: the JSON summary for a month, one site's
/// destination copies, and the CSV of the finest groups. Refused requests are counted since start
/// and are not part of the log, so they are left out.
private func numbers(_ endpoint: LiveEndpoint) throws -> [String] {
    endpoint.server.waitUntilSummaryIsReady()
    return try ["?from=2026-10-01&to=2026-11-30", "?site=shop.example&role=destination&from=2026-10-01&to=2026-11-30"].map { query in
        let response = try endpoint.get("/api/summary" + query)
        #expect(response.status == 200, "\(response.bodyText)")
        var object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        object["rejected_by_rule"] = nil
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    } + [try endpoint.get("/api/summary.csv?from=2026-10-01&to=2026-11-30").bodyText]
}

private func start(_ directory: String) throws -> LiveEndpoint {
    try LiveEndpoint(sites: Demo.sites, directory: directory) { $0.manualClock = true }
}

private let checkpointName = SummaryCheckpoint.fileName

/// Starts on `directory` as it is, reads the numbers and how the checkpoint was taken, stops.
private func restart(_ directory: String) throws -> (numbers: [String], checkpoint: String?) {
    let endpoint = try start(directory)
    defer { endpoint.stop() }
    let seen = try numbers(endpoint)
    return (seen, endpoint.server.summaryCheckpoint)
}

/// The numbers of a full rebuild: the same log with no checkpoint beside it.
private func fullRebuild(of directory: String) throws -> [String] {
    let copy = temporaryDirectory()
    try FileManager.default.removeItem(atPath: copy)
    try FileManager.default.copyItem(atPath: directory, toPath: copy)
    try? FileManager.default.removeItem(atPath: copy + "/" + checkpointName)
    let (seen, checkpoint) = try restart(copy)
    #expect(checkpoint == "missing")
    return seen
}

private func copyFile(_ from: String, _ to: String) throws {
    try? FileManager.default.removeItem(atPath: to)
    try FileManager.default.copyItem(atPath: from, toPath: to)
}

@Suite(.serialized) struct SummaryCheckpointTests {
    @Test func aRestartWithACheckpointGivesTheNumbersOfAFullRebuild() throws {
        let directory = temporaryDirectory()
        let first = try start(directory)
        try Demo.drive(port: first.port, token: "test-token")
        let live = try numbers(first)
        first.stop()
        #expect(FileManager.default.fileExists(atPath: directory + "/" + checkpointName), "a stop writes the checkpoint")

        let (restarted, checkpoint) = try restart(directory)
        #expect(checkpoint == "used")
        #expect(restarted == live)
        #expect(restarted == (try fullRebuild(of: directory)))
    }

    /// A checkpoint of an earlier state of this same log: used, and the reports after it are read.
    @Test func aCheckpointBehindTheLogIsUsedAndTheRestIsRead() throws {
        let directory = temporaryDirectory()
        let first = try start(directory)
        try Demo.drive(port: first.port, token: "test-token")
        first.stop()
        let older = temporaryDirectory() + "/older.checkpoint"
        try copyFile(directory + "/" + checkpointName, older)

        let second = try start(directory)
        second.server.waitUntilSummaryIsReady()
        second.clock.set("2026-11-25T10:00:00Z")
        for n in 0..<40 {
            #expect(try second.post(reportBody(sourceID: n), host: n % 2 == 0 ? "news.example" : "shop.example").status == 201)
        }
        second.stop()
        try copyFile(older, directory + "/" + checkpointName)

        let (restarted, checkpoint) = try restart(directory)
        #expect(checkpoint == "used")
        #expect(restarted == (try fullRebuild(of: directory)))
    }

    /// The log no longer begins as it did when the checkpoint was written: a record in it damaged,
    /// or the log restored from a backup older than the checkpoint. Never trusted; rebuilt.
    @Test func aCheckpointThatNoLongerDescribesTheLogIsRebuilt() throws {
        let directory = temporaryDirectory()
        let first = try start(directory)
        try Demo.drive(port: first.port, token: "test-token")
        first.stop()
        let backup = temporaryDirectory() + "/reports.log"
        try copyFile(directory + "/reports.log", backup)

        // The log grows and a newer checkpoint is written; then the older log is restored.
        let second = try start(directory)
        second.server.waitUntilSummaryIsReady()
        for n in 0..<10 { #expect(try second.post(reportBody(sourceID: n)).status == 201) }
        second.stop()
        try copyFile(backup, directory + "/reports.log")
        var (seen, checkpoint) = try restart(directory)
        #expect(checkpoint == "stale")
        #expect(seen == (try fullRebuild(of: directory)))

        // One byte of one report's body changed, inside the prefix a fresh checkpoint names.
        let log = try FileHandle(forUpdating: URL(fileURLWithPath: directory + "/reports.log"))
        try log.seek(toOffset: 5_000)
        let byte = try #require(try log.read(upToCount: 1))
        try log.seek(toOffset: 5_000)
        try log.write(contentsOf: Data([byte[0] ^ 0x20]))
        try log.close()
        (seen, checkpoint) = try restart(directory)
        #expect(checkpoint == "stale")
        #expect(seen == (try fullRebuild(of: directory)))
    }

    @Test func aDamagedCheckpointIsRebuiltAtStart() throws {
        let directory = temporaryDirectory()
        let first = try start(directory)
        try Demo.drive(port: first.port, token: "test-token")
        first.stop()
        let path = directory + "/" + checkpointName
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        let (seen, checkpoint) = try restart(directory)
        #expect(checkpoint?.hasPrefix("damaged") == true, "\(checkpoint ?? "nil")")
        #expect(seen == (try fullRebuild(of: directory)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count > whole.count / 2, "the stop wrote a whole one again")
    }

    /// Every cut and every flipped bit of a checkpoint file is caught before it is used.
    @Test func aCheckpointCutAtAnyByteOrWithAnyBitFlippedIsDetected() throws {
        var aggregates = SummaryAggregates()
        var sites = InternedStrings()
        for n in 0..<20 {
            let body = Array(reportBody(sourceID: n * 7, triggerData: n % 16).utf8)
            let report = StoredReport(id: UInt64(n + 1), receivedAt: Timestamp(millisecondsSinceEpoch: 1_795_168_800_000 + Int64(n) * 3_600_000),
                                      role: n % 3 == 0 ? .destination : .source, verdict: n % 4 == 0 ? .quarantined : .accepted,
                                      reasons: n % 4 == 0 ? ["no_matching_trigger"] : [], body: body,
                                      triggerID: nil, campaign: n % 2 == 0 ? "Winter sale" : nil, triggerRecordedAt: nil)
            aggregates.add(report, try #require(ReportFacts.scan(body, sites: &sites)))
        }
        let prefix = LogPrefix(end: 4_096, records: 21, digest: 0x0123_4567_89AB_CDEF)
        let path = temporaryDirectory() + "/" + checkpointName
        try SummaryCheckpoint.write(aggregates, prefix: prefix, toPath: path)
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard case .success(let (readPrefix, read)) = SummaryCheckpoint.read(atPath: path) else {
            Issue.record("the whole checkpoint does not read back")
            return
        }
        #expect(readPrefix == prefix)
        #expect(SummaryCheckpoint.claimedPrefix(atPath: path) == prefix)
        var again: [UInt8] = [], original: [UInt8] = []
        SummaryCheckpoint.encode(read, into: &again)
        SummaryCheckpoint.encode(aggregates, into: &original)
        #expect(again.count == original.count && read.names == aggregates.names && read.sites == aggregates.sites)
        #expect(read.days.keys.sorted() == aggregates.days.keys.sorted())
        for (day, d) in aggregates.days {
            #expect(read.days[day]?.groups == d.groups && read.days[day]?.campaigns == d.campaigns
                    && read.days[day]?.conversions == d.conversions && read.days[day]?.delays == d.delays
                    && read.days[day]?.quarantineReasons == d.quarantineReasons && read.days[day]?.totals == d.totals)
        }

        for length in 0..<whole.count {
            try Data(whole.prefix(length)).write(to: URL(fileURLWithPath: path))
            guard case .failure(.damaged) = SummaryCheckpoint.read(atPath: path) else {
                Issue.record("a checkpoint cut to \(length) of \(whole.count) bytes was not detected")
                continue
            }
        }
        for position in 0..<whole.count {
            var flipped = whole
            flipped[position] ^= 1 << UInt8(position % 8)
            try Data(flipped).write(to: URL(fileURLWithPath: path))
            guard case .failure(.damaged) = SummaryCheckpoint.read(atPath: path) else {
                Issue.record("a flipped bit at byte \(position) was not detected")
                continue
            }
        }
        try FileManager.default.removeItem(atPath: path)
        guard case .failure(.missing) = SummaryCheckpoint.read(atPath: path) else {
            Issue.record("a missing checkpoint is not reported as missing")
            return
        }
    }
}
