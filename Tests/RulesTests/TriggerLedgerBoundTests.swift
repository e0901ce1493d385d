import Testing
@testable import Primitives
@testable import SiteOwners

/// The pixel answers anyone: a flood of conversions on one site must not grow the ledger past its
/// bound, nor take another site's triggers with it.
@Suite struct TriggerLedgerBoundTests {
    static let t0 = Timestamp(rfc3339: "2026-11-20T10:00:00Z")!

    static func trigger(_ id: UInt64, ms: Int64, site: String = "shop.example", data: UInt8) -> Trigger {
        Trigger(id: id, recordedAt: t0.adding(milliseconds: ms), site: site, triggerData: data, priority: 0, attributionSource: nil)
    }

    @Test func aFloodOnOneSiteKeepsItsNewestUpToTheBoundAndLeavesOtherSitesAlone() {
        var ledger = TriggerLedger(perSiteBound: 1_000)
        ledger.record(Self.trigger(0, ms: 0, site: "other.example", data: 3))
        for i in 1...20_000 { ledger.record(Self.trigger(UInt64(i), ms: Int64(i), data: UInt8(i % 16))) }
        let kept = ledger.unused(site: "shop.example")
        #expect(kept.count >= 1_000 && kept.count <= 1_125)
        // The newest are kept, in order, across the sixteen trigger data.
        #expect(kept.last?.id == 20_000)
        #expect(kept.map(\.id) == Array(UInt64(20_001 - kept.count)...20_000))
        #expect(ledger.forgottenEarly == 20_000 - kept.count)
        #expect(ledger.unused(site: "other.example").map(\.id) == [0])
        #expect(ledger.count == kept.count + 1)
    }

    @Test func aFloodAtOneInstantIsBoundedToo() {
        // A manual clock records everything at the same millisecond: ties are cut by count.
        var ledger = TriggerLedger(perSiteBound: 100)
        for i in 1...5_000 { ledger.record(Self.trigger(UInt64(i), ms: 0, data: 5)) }
        #expect(ledger.count <= 112 && ledger.count >= 100)
        #expect(ledger.forgottenEarly == 5_000 - ledger.count)
    }

    @Test func forgottenTriggersLoseTheirConsumptionMarks() {
        var ledger = TriggerLedger(perSiteBound: 8)
        for i in 1...9 { ledger.record(Self.trigger(UInt64(i), ms: Int64(i), data: 1)) }
        ledger.consume(1)
        ledger.consume(9)
        for i in 10...40 { ledger.record(Self.trigger(UInt64(i), ms: Int64(i), data: 1)) }
        #expect(ledger.consumed == [])
        // A report in the window finds only what is kept.
        let found = ledger.candidates(source: "shop.example", destination: "shop.example", triggerData: 1, in: 0...Int64.max)
        #expect(found.count == ledger.count && found.allSatisfy { $0.id > 30 })
    }
}
