import Foundation
import PCM
import Primitives
import Testing
@testable import Endpoint

/// What a stranger sends cannot grow the summary without bound: a served site keeps at most
/// `maxPartnersPerDay` partner sites apart in a day, per role, and the rest are one row that says
/// so; every report is still counted.
@Suite struct StrangerStateTests {
    static func facts(source: String, destination: String = "shop.example") -> ReportFacts {
        ReportFacts(sourceSite: source, sourceID: 7, attributedOnSite: destination, triggerData: 3)
    }

    static func add(_ aggregates: inout SummaryAggregates, day: Int32, source: String, role: ReportRole = .destination,
                    destination: String = "shop.example") {
        aggregates.add(day: day, role: role, accepted: false, late: false, verifiedToken: false, quarantineReasons: ["no_matching_trigger"],
                       campaign: nil, delayBucket: nil, facts: facts(source: source, destination: destination))
    }

    static func partners(_ aggregates: SummaryAggregates, day: Int32) -> [String: Int] {
        var out: [String: Int] = [:]
        for (g, n) in aggregates.days[day]?.groups ?? [:] where g.role == .destination {
            out[aggregates.name(g.sourceSite), default: 0] += n
        }
        return out
    }

    @Test func aFloodOfMadeUpSourceSitesIsFoldedIntoOneRow() {
        var aggregates = SummaryAggregates()
        let limit = SummaryAggregates.maxPartnersPerDay
        for i in 0..<(limit + 500) { Self.add(&aggregates, day: 100, source: "made-up-\(i).example") }
        // Repeats of admitted ones stay theirs; a repeat of a folded one stays folded.
        Self.add(&aggregates, day: 100, source: "made-up-0.example")
        Self.add(&aggregates, day: 100, source: "made-up-\(limit + 10).example")
        let rows = Self.partners(aggregates, day: 100)
        #expect(rows.count == limit + 1)
        #expect(rows[SummaryAggregates.foldedPartner] == 501)
        #expect(rows["made-up-0.example"] == 2)
        #expect(rows.values.reduce(0, +) == limit + 502, "every report counted")
        // Names past the bound are never interned.
        #expect(aggregates.id(of: "made-up-\(limit + 10).example") == nil)
        #expect(aggregates.names.count < limit + 10)
        // A new day, a new bound; the publisher's own copies (source role) have their own.
        Self.add(&aggregates, day: 101, source: "made-up-\(limit + 10).example")
        #expect(Self.partners(aggregates, day: 101)["made-up-\(limit + 10).example"] == 1)
        for i in 0..<(limit + 5) { Self.add(&aggregates, day: 100, source: "shop.example", role: .source, destination: "d\(i).example") }
        let destinations = Set(aggregates.days[100]!.groups.keys.filter { $0.role == .source }.map { aggregates.name($0.destination) })
        #expect(destinations.count == limit + 1 && destinations.contains(SummaryAggregates.foldedPartner))
    }

    @Test func sourceIdsAndTriggerDataCannotMultiplyRowsWithoutBound() {
        var aggregates = SummaryAggregates()
        aggregates.groupsPerDayBound = 10_000  // 65,536 in service: the same rule, quicker to reach
        let limit = aggregates.groupsPerDayBound
        var added = 0
        // Partners within their bound, each with every source id and trigger data, accepted and
        // not: 8,192 groups each, till past the day's bound.
        outer: for partner in 0..<8 {
            for sourceID in 0..<256 {
                for triggerData in 0..<16 {
                    for accepted in [false, true] {
                        aggregates.add(day: 9, role: .destination, accepted: accepted, late: false, verifiedToken: false,
                                       quarantineReasons: accepted ? [] : ["no_matching_trigger"], campaign: nil, delayBucket: nil,
                                       facts: ReportFacts(sourceSite: "p\(partner).example", sourceID: UInt8(sourceID),
                                                          attributedOnSite: "shop.example", triggerData: UInt8(triggerData)))
                        added += 1
                        if added == limit + 30_000 { break outer }
                    }
                }
            }
        }
        let groups = aggregates.days[9]!.groups
        // Past the bound, new groups went under the folded partner: at most its 256 × 16 × 8 more.
        #expect(groups.count > limit && groups.count <= limit + 256 * 16 * 8)
        #expect(groups.values.reduce(0, +) == added, "every report counted")
        #expect(groups.keys.contains { aggregates.name($0.sourceSite) == SummaryAggregates.foldedPartner })
    }

    @Test func countsStagedElsewhereKeepTheBoundWhenMerged() {
        var main = SummaryAggregates()
        for i in 0..<200 { Self.add(&main, day: 5, source: "early-\(i).example") }
        var staged = SummaryAggregates()
        for i in 0..<200 { Self.add(&staged, day: 5, source: "late-\(i).example") }
        staged.add(day: 5, role: .destination, accepted: true, late: false, verifiedToken: false, quarantineReasons: [], campaign: "Winter sale",
                   delayBucket: 2, facts: Self.facts(source: "late-199.example"))
        main.merge(staged)
        let rows = Self.partners(main, day: 5)
        #expect(rows.count == SummaryAggregates.maxPartnersPerDay + 1)
        #expect(rows.values.reduce(0, +) == 401)
        // The accepted report's campaign row is under the name its group has (its own, or the
        // folded one: which partners of one batch are admitted follows the batch's order).
        let campaigns = main.days[5]!.campaigns.keys.map { main.name($0.sourceSite) }
        let groups = main.days[5]!.groups.keys.filter(\.accepted).map { main.name($0.sourceSite) }
        #expect(campaigns.count == 1 && campaigns == groups)
        #expect(main.names.count <= SummaryAggregates.maxPartnersPerDay + 8, "names past the bound are not interned")
    }

    @Test func theLiveSummaryStaysSmallAndSaysWhatItFolded() throws {
        let directory = temporaryDirectory()
        var endpoint = try LiveEndpoint(directory: directory)
        let before = try endpoint.get("/api/summary").body.count
        let flood = SummaryAggregates.maxPartnersPerDay + 100
        for i in 0..<flood {
            #expect(try endpoint.post(reportBody(sourceSite: "stranger-\(i).example"), host: "shop.example").status == 201)
        }
        // The CSV lists every group: its distinct source sites are what a flood would grow.
        let csv = try endpoint.get("/api/summary.csv").bodyText
        let sources = Set(csv.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",")[4] })
        #expect(sources.count == SummaryAggregates.maxPartnersPerDay + 1)
        #expect(csv.contains(SummaryAggregates.foldedPartner))
        let summary = json(try endpoint.get("/api/summary"))
        let quarantined = (summary["quarantined"] as? [String: Int])?["destination"] ?? 0
        let accepted = (summary["accepted"] as? [String: Int])?["destination"] ?? 0
        #expect(quarantined + accepted == flood)
        let size = try endpoint.get("/api/summary").body.count
        // A restart reads the checkpoint: a new made-up site the same day is folded still.
        endpoint.stop()
        endpoint = try LiveEndpoint(directory: directory)
        defer { endpoint.stop() }
        endpoint.server.waitUntilSummaryIsReady()
        #expect(try endpoint.post(reportBody(sourceSite: "one-more.example"), host: "shop.example").status == 201)
        let again = try endpoint.get("/api/summary.csv").bodyText
        #expect(!again.contains("one-more.example"))
        #expect(Set(again.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",")[4] }).count == SummaryAggregates.maxPartnersPerDay + 1)
        #expect(size < before + 64 * 1024, "the summary grew from \(before) to \(size) bytes")
    }
}
