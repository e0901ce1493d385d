import Foundation
import Primitives
import RecordLog
import Testing
@testable import Demo
@testable import Endpoint

/// A start takes sealed segments from their digests and reads only the log written since: what
/// it rebuilds (the triggers, the postback ledger, the verified tokens) is what reading the whole
/// log gives, and a digest that is missing, damaged or of another log is never trusted.
@Suite(.serialized) struct StartDigestTests {
    static func start(_ directory: String) throws -> LiveEndpoint {
        try LiveEndpoint(sites: Demo.sites, directory: directory, startingAt: "2026-11-22T12:00:00Z").waitingForTheStartSweep()
    }

    /// What a start rebuilt, as the endpoint shows it.
    static func rebuilt(_ endpoint: LiveEndpoint) throws -> String {
        let metrics = try endpoint.get("/metrics").bodyText.split(separator: "\n").filter {
            $0.hasPrefix("attribution_tokens_remembered ") || $0.hasPrefix("attribution_postback_keys_in_memory ")
                || $0.hasPrefix("attribution_postback_late_retried ")
        }
        var byDay: [String: Int] = [:]
        let postbacks = try endpoint.get("/api/postbacks").bodyText.split(separator: "\n").map { line in
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            byDay[String((row["received_at"] as! String).prefix(10)), default: 0] += row["duplicates_received"] as! Int
            return "\(row["id"]!):\(row["duplicates_received"]!)"
        }
        // The Apps view counts a delivery that came again on the day of the postback it repeats:
        // each day's count is the sum over that day's postbacks.
        #expect(byDay.values.reduce(0, +) > 10)
        var appsDays: [String] = []
        for day in byDay.keys.sorted() {
            let summary = json(try endpoint.get("/api/apps/summary?from=\(day)&to=\(day)"))
            let duplicates = (summary["postbacks"] as? [String: Any])?["duplicates_received"] as? Int
            #expect(duplicates == byDay[day], "\(day)")
            appsDays.append("\(day):\(duplicates ?? -1)")
        }
        return "triggers \(endpoint.server.triggerCount)\n" + metrics.joined(separator: "\n") + "\n" + postbacks.joined(separator: " ")
            + "\n" + appsDays.joined(separator: " ")
    }

    @Test func aRestartReadsOnlyTheLogSinceTheLastDigestAndRebuildsTheSame() throws {
        let directory = temporaryDirectory()
        let first = try LiveEndpoint(sites: Demo.sites, directory: directory) { $0.manualClock = true }
        try Demo.drive(port: first.port, token: "test-token")
        // The thread wrote most as the demo's days passed; this writes the rest.
        first.server.digests.sweep()
        let sealed = first.server.store.segments.filter(\.sealed)
        #expect(sealed.count >= 20 && first.server.digests.count == sealed.count)
        // What the log holds once each run has stopped: what the next start reads.
        var records = (active: 0, all: 0)
        func stop(_ endpoint: LiveEndpoint) {
            endpoint.stop()
            records = (endpoint.server.store.segments.last!.records, endpoint.server.store.segments.reduce(0) { $0 + $1.records })
        }
        stop(first)

        // From the digests: only the active segment is read.
        var endpoint = try Self.start(directory)
        #expect(endpoint.server.startedFromDigests == sealed.count)
        #expect(endpoint.server.store.replay.recordsRead == records.active)
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_segment_digests \(sealed.count)\n"))
        let fromDigests = try Self.rebuilt(endpoint)
        #expect(!fromDigests.contains("triggers 0\n") && !fromDigests.contains("attribution_tokens_remembered 0\n"))
        stop(endpoint)

        // Without them: the whole log is read, and gives the same; the start writes them again.
        try FileManager.default.removeItem(atPath: directory + "/digests")
        endpoint = try Self.start(directory)
        #expect(endpoint.server.startedFromDigests == 0)
        #expect(endpoint.server.store.replay.recordsRead == records.all)
        #expect(try Self.rebuilt(endpoint) == fromDigests)
        #expect(endpoint.server.digests.count == endpoint.server.store.segments.filter(\.sealed).count)
        stop(endpoint)

        // A damaged digest: taken up to it, and the log read from its segment on.
        let middle = sealed[sealed.count / 2]
        let path = directory + "/digests/\(middle.base).digest"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x08
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        endpoint = try Self.start(directory)
        #expect(endpoint.server.startedFromDigests == sealed.count / 2)
        #expect(try Self.rebuilt(endpoint) == fromDigests)
        // Its start wrote it again, and kept the later ones, which are whole.
        #expect(SegmentDigest.decode(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))?.describes(middle) == true)
        stop(endpoint)

        // A digest of another log in a segment's place (same base and end, other records):
        // everything is read again from the log.
        let other = SegmentDigest(base: middle.base, end: middle.end, records: middle.records + 1, sections: [
            "postback-ledger-2": [0], "triggers-1": [], "verified-tokens-1": [], "apps-6": Array("[]".utf8), "apple-ads-2": [0, 0, 0, 0, 0, 0, 0, 0],
        ])
        try Data(other.encoded()).write(to: URL(fileURLWithPath: path))
        endpoint = try Self.start(directory)
        #expect(endpoint.server.startedFromDigests == 0)
        #expect(try Self.rebuilt(endpoint) == fromDigests)
        stop(endpoint)
    }

    @Test func aDigestThatIsNotWholeIsRefused() throws {
        let digest = SegmentDigest(base: 4096, end: 9000, records: 12, sections: ["a": [1, 2, 3], "bb": []])
        let whole = digest.encoded()
        #expect(SegmentDigest.decode(whole) == digest)
        for length in 0..<whole.count { #expect(SegmentDigest.decode(Array(whole[..<length])) == nil, "cut at \(length)") }
        for i in whole.indices {
            var bytes = whole
            bytes[i] ^= 0x20
            #expect(SegmentDigest.decode(bytes) == nil, "flipped byte \(i)")
        }
        // A section length past the file under a checksum that matches: refused, not allocated.
        var forged = Array(whole[..<(8 + 24 + 2 + 1 + 1)])
        forged.appendLE(UInt64.max)
        forged.appendLE(CRC32C.checksum(forged))
        #expect(SegmentDigest.decode(forged) == nil)
    }
}
