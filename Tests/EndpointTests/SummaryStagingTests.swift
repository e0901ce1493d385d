import PCM
import Primitives
import SiteOwners
import PCMRecords
import RecordLog
import Testing
@testable import Endpoint

/// The summary counts a batch while its flush is in flight (`SummaryStore.stage`), so that the
/// event loop does that work while the disk is busy. What a reader of the summary sees must not
/// change by it: a report shows once it is on disk, never before, and never if its flush fails.
@Suite struct SummaryStagingTests {
    private static let query = SummaryQuery(site: nil, from: 20_700, to: 20_800, role: nil)

    /// Reports of several groups, days, roles and verdicts, as ingest would hand them over.
    private static func reports(_ range: Range<Int>) throws -> [(StoredReport, ReportFacts)] {
        var sites = InternedStrings()
        return try range.map { n in
            let body = Array(reportBody(sourceID: n * 7 % 256, destination: n % 3 == 0 ? "shop.example" : "store.example",
                                        triggerData: n % 16).utf8)
            let report = StoredReport(id: UInt64(n + 1),
                                      receivedAt: Timestamp(millisecondsSinceEpoch: 1_795_168_800_000 + Int64(n) * 7_200_000),
                                      role: n % 2 == 0 ? .destination : .source, verdict: n % 5 == 0 ? .quarantined : .accepted,
                                      reasons: n % 5 == 0 ? ["no_matching_trigger"] : [], body: body, triggerID: nil,
                                      campaign: n % 4 == 0 ? "Winter sale" : nil, triggerRecordedAt: nil)
            return (report, try #require(ReportFacts.scan(body, sites: &sites)))
        }
    }

    /// What the summary API would answer and what the CSV export would hold; nil while unavailable.
    private static func seen(_ book: SummaryStore) -> String? {
        try? book.read(seen).get()
    }

    private static func seen(_ aggregates: SummaryAggregates) -> String {
        SummaryReport(aggregates, query).json(registry: Registry(), rejections: [:])
            + SummaryReport.csv(aggregates, query, registry: Registry())
    }

    @Test func aStagedBatchShowsOnlyOnceItIsStoredAndThenAsIfAddedOneByOne() throws {
        let staged = SummaryStore(complete: true)
        var added = SummaryAggregates()
        let empty = try #require(Self.seen(staged))
        let first = try Self.reports(0..<40)
        for (report, facts) in first { staged.stage(report, facts) }
        #expect(Self.seen(staged) == empty, "a batch whose flush is in flight is not shown")

        staged.commitStaged()
        for (report, facts) in first { added.add(report, facts) }
        let afterFirst = try #require(Self.seen(staged))
        #expect(afterFirst != empty)
        #expect(afterFirst == Self.seen(added))
        staged.commitStaged()
        #expect(Self.seen(staged) == afterFirst, "the other reports of the batch find nothing left to merge")

        for (report, facts) in try Self.reports(40..<55) { staged.stage(report, facts) }
        staged.dropStaged()
        staged.commitStaged()
        #expect(Self.seen(staged) == afterFirst, "a batch whose flush failed is never counted")

        let second = try Self.reports(55..<90)
        for (report, facts) in second { staged.stage(report, facts) }
        staged.commitStaged()
        for (report, facts) in second { added.add(report, facts) }
        #expect(Self.seen(staged) == Self.seen(added))
    }

    /// While the summary is rebuilt from the log after a start, stored batches are kept apart
    /// and merged into the rebuilt counts, like reports added one by one.
    @Test func aBatchStoredDuringTheRebuildIsInTheRebuiltSummary() throws {
        let rebuilding = SummaryStore(complete: false)
        var added = SummaryAggregates()
        let batch = try Self.reports(0..<25)
        for (report, facts) in batch { rebuilding.stage(report, facts) }
        rebuilding.commitStaged()
        #expect(Self.seen(rebuilding) == nil, "unavailable until the rebuild is done")

        let store = try RecordLog(directory: temporaryDirectory())
        defer { store.close() }
        #expect(rebuilding.rebuild(from: store, through: store.bytesOnDisk) { false })
        for (report, facts) in batch { added.add(report, facts) }
        #expect(Self.seen(rebuilding) != nil && Self.seen(rebuilding) == Self.seen(added))
    }
}
