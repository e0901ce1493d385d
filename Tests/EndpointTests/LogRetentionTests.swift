import Foundation
import Locking
import SiteOwners
import Primitives
import RecordLog
import Testing
@testable import Demo
@testable import Endpoint

/// The Apps view's numbers for the demo's month, without the day records are kept from.
private func appsNumbers(_ endpoint: LiveEndpoint, withCrosstab: Bool = true) throws -> String {
    var object = json(try endpoint.get("/api/apps/summary?from=2026-10-01&to=2026-11-30"))
    object["records_kept_from"] = nil
    // Digests from before the campaign × value table have none for their days.
    if !withCrosstab { object["crosstab"] = nil }
    return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

/// The PCM summary as numbers, without what depends on when it is asked (refusals since start,
/// the day records are kept from).
private func pcmNumbers(_ endpoint: LiveEndpoint) throws -> String {
    endpoint.server.waitUntilSummaryIsReady()
    let response = try endpoint.get("/api/summary?from=2026-10-01&to=2026-11-30")
    #expect(response.status == 200, "\(response.bodyText)")
    var object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    object["rejected_by_rule"] = nil
    object["records_kept_from"] = nil
    return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

private func retained(_ directory: String, days: Int = 10) throws -> LiveEndpoint {
    // The test's clock stands at 2026-11-20T10:00Z; the demo ran 2026-11-01 to 2026-11-22.
    let endpoint = try LiveEndpoint(sites: Demo.sites, directory: directory) { c in
        c.lateCutoffDays = 7
        c.retentionDays = days
        c.postbackWindowDays = 10
    }.waitingForTheStartSweep()
    // Until the rebuild has taken the checkpoint, nothing counts as kept elsewhere.
    endpoint.server.waitUntilSummaryIsReady()
    return endpoint
}

/// `--retention-days`: whole segments go once they are old and kept elsewhere; the exports lose
/// their records, the PCM summary does not, and a restart still finds everything it needs.
@Suite(.serialized) struct LogRetentionTests {
    @Test func oldSegmentsGoAndTheSummaryStillCountsTheirReports() throws {
        let directory = temporaryDirectory()
        let first = try LiveEndpoint(sites: Demo.sites, directory: directory) { $0.manualClock = true }
        try Demo.drive(port: first.port, token: "test-token")
        let numbers = try pcmNumbers(first)
        let apps = try appsNumbers(first)
        let postbacks = json(try first.get("/api/apps/summary?from=2026-10-01&to=2026-11-30"))["postbacks"] as? [String: Any]
        #expect(postbacks?["stored"] as? Int ?? 0 > 200)
        // The demo's devices send some postbacks again: counted at the postbacks they repeat,
        // which retention removes below, and still counted after it.
        #expect(postbacks?["duplicates_received"] as? Int ?? 0 > 10)
        let everything = try first.export()
        let segmentsBefore = first.server.store.segments
        first.stop()
        // One segment a day of the demo (and the restart's).
        #expect(segmentsBefore.count >= 21)

        // The stop's checkpoint covers every sealed segment, so retention may take the old ones.
        let second = try retained(directory)
        let limits = "tabled through \(second.server.postbackWindow.tabledThrough), digested through \(second.server.digests.digestedThrough)"
        second.server.retention!.sweep()
        let cutoff = Timestamp(rfc3339: "2026-11-10T10:00:00Z")!
        let kept = second.server.store.segments
        #expect(kept.count < segmentsBefore.count, "\(limits); segments \(segmentsBefore.map { ($0.base, $0.end, $0.lastTime!.rfc3339) })")
        // Every segment removed ended before the cutoff; the oldest kept one does not.
        for segment in segmentsBefore where segment.end <= kept[0].base {
            #expect(segment.lastTime! < cutoff)
        }
        #expect(kept[0].lastTime! >= cutoff, "\(limits); kept from \(kept[0].base); segments \(segmentsBefore.map { ($0.base, $0.end, $0.lastTime!.rfc3339) })")
        let keptFrom = kept[0].firstTime!
        // The PCM summary counts every report still: from its checkpoint; the Apps view every
        // postback, from its days' counts.
        #expect(try pcmNumbers(second) == numbers)
        #expect(try appsNumbers(second) == apps)
        #expect(json(try second.get("/api/summary"))["records_kept_from"] as? String == String(keptFrom.rfc3339.prefix(10)))
        // The export has the kept reports only, all of them.
        let exported = try second.export()
        let stillThere = everything.filter { ($0["received_at"] as? String).flatMap { Timestamp(rfc3339: $0) }! >= keptFrom }
        #expect(exported.map { $0["id"] as? Int } == stillThere.map { $0["id"] as? Int })
        #expect(exported.count < everything.count)
        let metrics = try second.get("/metrics").bodyText
        #expect(metrics.contains("attribution_log_retention_seconds 864000\n"))
        #expect(metrics.contains("attribution_log_oldest_record_timestamp_seconds \(keptFrom.millisecondsSinceEpoch / 1000)\n"))
        #expect(metrics.contains("attribution_log_segment_bytes{segment=\"\(kept[0].base)\""))
        // A report is stored after them, with the next id.
        let stored = try second.post(reportBody(), host: "news.example")
        #expect(stored.status == 201, "\(stored.bodyText)")
        second.stop()

        // A restart on what is left: the summary from its checkpoint, the export as it was.
        let third = try retained(directory)
        #expect(third.server.summaryCheckpoint == "used")
        // The removed segments' digests keep their days for the Apps view.
        #expect(try appsNumbers(third) == apps)
        let newID = json(stored)["id"] as? Int
        #expect(newID == (everything.last?["id"] as? Int).map { $0 + 1 })
        #expect(try third.export().map { $0["id"] as? Int } == (stillThere.map { $0["id"] as? Int } + [newID]))
        #expect(third.server.store.segments.first!.base == kept[0].base)
        let appsBeforeLegacy = try appsNumbers(third, withCrosstab: false)
        third.stop()

        // Removed segments' digests written before `apps-3` (conversions counted by their kind's
        // name, no postbacks by value) are still read: no start can write them again.
        let removed = try FileManager.default.contentsOfDirectory(atPath: directory + "/digests")
            .compactMap { Int($0.dropLast(".digest".count)) }.filter { $0 < kept[0].base }
        #expect(!removed.isEmpty)
        for base in removed {
            let path = directory + "/digests/\(base).digest"
            var digest = try #require(SegmentDigest.decode(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))))
            let section = try #require(digest.sections["apps-6"])
            var pairs = try #require(try JSONSerialization.jsonObject(with: Data(section)) as? [[String: Any]])
            for i in pairs.indices {
                var summary = try #require(pairs[i]["summary"] as? [String: Any])
                let conversions = try #require(summary["conversions"] as? [Any])
                summary["conversions"] = try conversions.enumerated().map { n, element -> Any in
                    guard n % 2 == 1 else { return element }
                    let counts = try #require(element as? [String: Int])
                    return ["installs": counts["installs"], "redownloads": counts["redownloads"], "re_engagements": counts["reEngagements"]]
                        .compactMapValues { $0 == 0 ? nil : $0 }
                }
                pairs[i]["summary"] = summary
            }
            digest.sections = ["apps-2": [UInt8](try JSONSerialization.data(withJSONObject: pairs))]
            try Data(digest.encoded()).write(to: URL(fileURLWithPath: path))
        }
        let fourth = try retained(directory)
        defer { fourth.stop() }
        #expect(try appsNumbers(fourth, withCrosstab: false) == appsBeforeLegacy)
    }

    @Test func aSegmentGoesOnlyOnceTheCheckpointAndTheExportHavePassedIt() throws {
        let directory = temporaryDirectory()
        let clock = EndpointClock(manual: true)
        clock.set(Timestamp(rfc3339: "2026-11-01T12:00:00Z")!)
        let store = try RecordLog(directory: directory, clock: { clock.now() })
        defer { store.close() }
        // A record a day, each committed before the next: a segment rolls between batches.
        for day in [0, 1, 2, 3, 4, 4] {
            clock.set(Timestamp(millisecondsSinceEpoch: Timestamp(rfc3339: "2026-11-01T12:00:00Z")!.millisecondsSinceEpoch + Int64(day) * TimingModel.day))
            let done = DispatchSemaphore(value: 0)
            _ = store.append(kind: RecordKind(9, name: "test"), tag: 0, completion: { _ in done.signal() }) { $0.append(1) }
            done.wait()
        }
        let segments = store.segments
        #expect(segments.count == 5)
        clock.set(Timestamp(rfc3339: "2026-11-05T13:00:00Z")!)
        let safe = Locked(0)
        let announced = Locked<[String]>([])
        let retention = LogRetention(days: 2, store: store, clock: clock, keptElsewhereThrough: { safe.withLock { $0 } },
                                     announce: { event, _ in announced.withLock { $0.append(event) } })
        // Old enough, but not yet kept elsewhere.
        #expect(retention.sweep().isEmpty)
        // Kept elsewhere through the second segment: only those two go, though three are old.
        safe.withLock { $0 = segments[1].end }
        #expect(retention.sweep().map(\.base) == [segments[0].base, segments[1].base])
        safe.withLock { $0 = .max }
        // The third ended on 2026-11-03 12:00, more than two days before 13:00 on the 5th; the fourth did not.
        #expect(retention.sweep().map(\.base) == [segments[2].base])
        #expect(retention.sweep().isEmpty)
        #expect(retention.removed.segments == 3)
        #expect(announced.withLock { $0 } == ["log_segments_removed", "log_segments_removed"])
        #expect(store.segments.map(\.base) == [segments[3].base, segments[4].base])
    }

    @Test func retentionShorterThanTheLateCutoffOrTenDaysIsRefused() throws {
        for (days, cutoff, refused) in [(9, 3, true), (10, 3, false), (30, 30, true), (31, 30, false)] {
            var configuration = EndpointConfiguration()
            configuration.sites = ["news.example"]
            configuration.lateCutoffDays = cutoff
            configuration.retentionDays = days
            #expect((try? configuration.check()) == nil ? refused : !refused, "\(days) days with a cutoff of \(cutoff)")
        }
    }
}
