import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

private let t0 = Timestamp(rfc3339: "2026-11-20T10:00:00Z")!
private let second: Int64 = 1000
private let hour = TimingModel.hour
private let day = TimingModel.day

private func at(_ offset: Int64) -> Timestamp { t0.adding(milliseconds: offset) }

private func report(sourceID: UInt8 = 42, triggerData: UInt8 = 5, source: String = "news.example",
                    destination: String = "shop.example") -> PCMReport {
    PCMReport(sourceEngagementType: "click", sourceSite: source, sourceID: sourceID, attributedOnSite: destination,
              triggerData: triggerData, version: 3)
}

private func trigger(_ id: UInt64, at time: Timestamp, data: UInt8 = 5, priority: UInt8 = 0, site: String = "shop.example",
                     source: String? = "news.example") -> Trigger {
    Trigger(id: id, recordedAt: time, site: site, triggerData: data, priority: priority, attributionSource: source)
}

private func ledger(_ triggers: Trigger...) -> TriggerLedger {
    var l = TriggerLedger()
    for t in triggers { l.record(t) }
    return l
}

private func registry(_ campaigns: Campaign...) -> Registry {
    var r = Registry()
    for c in campaigns { try! r.add(c, siteRules: SiteRules()) }
    return r
}

private func campaign(_ name: String = "Winter", id: UInt8 = 42, destination: String = "shop.example",
                      starts: Timestamp = t0, ends: Timestamp? = t0.adding(milliseconds: 10 * TimingModel.day)) -> Campaign {
    Campaign(sourceSite: "news.example", sourceID: id, destination: destination, name: name, startsAt: starts, endsAt: ends)
}

@Suite struct DestinationCopyTimingTests {
    let model = TimingModel()

    /// Delay from trigger to receipt → verdict and reasons, exactly at the boundaries.
    @Test(arguments: [
        (23 * hour + 59 * 60 * second + 59 * second, TimingModel.Verdict.quarantined, ["debug_timing"]),
        (24 * hour, .accepted, []),
        (36 * hour, .accepted, []),
        (48 * hour, .accepted, []),
        (48 * hour + second, .accepted, ["late"]),
        (7 * day, .accepted, ["late"]),
        (7 * day + 48 * hour, .accepted, ["late"]),
        (30 * day, .accepted, ["late"]),
        (30 * day + second, .quarantined, ["too_late"]),
        (10 * second, .quarantined, ["debug_timing"]),
    ])
    func delayBoundaries(delay: Int64, verdict: TimingModel.Verdict, reasons: [String]) {
        let judgement = model.judgeDestinationCopy(report(), receivedAt: at(delay), ledger: ledger(trigger(1, at: t0)))
        #expect(judgement.verdict == verdict)
        #expect(judgement.reasons == reasons)
        #expect((judgement.trigger?.id == 1) == (verdict == .accepted))
    }

    @Test func theCutOffIsConfigurable() {
        let strict = TimingModel(cutoff: 3 * day)
        #expect(strict.judgeDestinationCopy(report(), receivedAt: at(3 * day), ledger: ledger(trigger(1, at: t0))).reasons == ["late"])
        #expect(strict.judgeDestinationCopy(report(), receivedAt: at(3 * day + 1), ledger: ledger(trigger(1, at: t0))).reasons == ["too_late"])
    }

    @Test func developmentModeAcceptsDebugModeReports() {
        let dev = TimingModel(acceptDebugReports: true)
        let judgement = dev.judgeDestinationCopy(report(), receivedAt: at(10 * second), ledger: ledger(trigger(1, at: t0)))
        #expect(judgement.verdict == .accepted)
        #expect(judgement.reasons == ["debug_report"])
        #expect(judgement.trigger?.id == 1)
    }

    @Test func theTriggerDataMustMatch() {
        let judgement = model.judgeDestinationCopy(report(triggerData: 6), receivedAt: at(30 * hour), ledger: ledger(trigger(1, at: t0)))
        #expect(judgement == TimingModel.Judgement(.quarantined, ["no_matching_trigger"]))
    }

    @Test func aSiteWithoutTriggersIsUnverified() {
        let other = ledger(trigger(1, at: t0, site: "elsewhere.example", source: nil))
        #expect(model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: other) == TimingModel.Judgement(.accepted, ["unverified_timing"]))
        #expect(model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: TriggerLedger()).reasons == ["unverified_timing"])
    }

    @Test func twoReportsCompeteForOneTrigger() {
        var l = ledger(trigger(1, at: t0))
        let first = model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: l)
        #expect(first.verdict == .accepted)
        l.consume(first.trigger!.id)
        let second = model.judgeDestinationCopy(report(), receivedAt: at(31 * hour), ledger: l)
        #expect(second == TimingModel.Judgement(.quarantined, ["no_matching_trigger"]))
        // Freed again (the first report could not be stored): the second one gets it.
        l.release(1)
        #expect(model.judgeDestinationCopy(report(), receivedAt: at(31 * hour), ledger: l).trigger?.id == 1)
    }

    @Test func twoTriggersBackTwoReportsAndTheOldestInModelGoesFirst() {
        var l = ledger(trigger(1, at: t0), trigger(2, at: at(2 * hour)))
        let first = model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: l)
        #expect(first.trigger?.id == 1)
        l.consume(1)
        let second = model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: l)
        #expect(second.trigger?.id == 2)
        #expect(second.reasons.isEmpty)
    }

    @Test func priorityDecidesWhichTriggerDataIsReportedAndTheLowerOneStaysUnused() {
        // A "signup" (data 2, priority 10) then a "purchase" (data 5, priority 40) after one click:
        // the browser reports only the purchase, 24–48 h after it.
        var l = ledger(trigger(1, at: t0, data: 2, priority: 10), trigger(2, at: at(hour), data: 5, priority: 40))
        let judgement = model.judgeDestinationCopy(report(triggerData: 5), receivedAt: at(25 * hour), ledger: l)
        #expect(judgement.trigger?.id == 2)
        #expect(judgement.reasons.isEmpty)
        l.consume(2)
        #expect(l.unused(site: "shop.example").map(\.id) == [1])
    }

    @Test func aSameSiteTriggerBacksOnlyReportsFromItsSource() {
        let l = ledger(trigger(1, at: t0, source: "other.example"))
        #expect(model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: l).reasons == ["no_matching_trigger"])
    }

    @Test func aCrossSiteTriggerOnTheSourceSiteBacksTheReport() {
        // The publisher's pixel, embedded in the advertiser's page, redirected on news.example.
        let l = ledger(trigger(1, at: t0, site: "news.example", source: nil))
        let judgement = model.judgeDestinationCopy(report(), receivedAt: at(30 * hour), ledger: l)
        #expect(judgement.verdict == .accepted)
        #expect(judgement.trigger?.id == 1)
    }

    @Test func triggersRecordedOutOfOrderAreStillFoundByTime() {
        let l = ledger(trigger(2, at: at(10 * hour)), trigger(1, at: t0), trigger(3, at: at(5 * hour)))
        #expect(l.candidates(source: "news.example", destination: "shop.example", triggerData: 5, in: 0...Int64.max).map(\.id) == [1, 3, 2])
        #expect(l.candidates(source: "news.example", destination: "shop.example", triggerData: 5,
                             in: at(hour).millisecondsSinceEpoch...at(6 * hour).millisecondsSinceEpoch).map(\.id) == [3])
    }

    @Test func pruningForgetsOldTriggersAndTheirMarks() {
        var l = ledger(trigger(1, at: t0), trigger(2, at: at(40 * day)))
        l.consume(1)
        l.prune(before: at(35 * day))
        #expect(l.count == 1)
        #expect(l.consumed.isEmpty)
    }
}

@Suite struct SourceCopyTimingTests {
    let model = TimingModel()

    /// A campaign running from t0 for 10 days; receipt relative to its start or end.
    @Test(arguments: [
        (24 * hour, TimingModel.Verdict.accepted, [String]()),
        (23 * hour + 59 * 60 * second + 59 * second, .quarantined, ["debug_timing"]),
        (10 * second, .quarantined, ["debug_timing"]),
        (-hour, .quarantined, ["outside_campaign_window"]),
    ])
    func receiptAfterTheStart(offset: Int64, verdict: TimingModel.Verdict, reasons: [String]) {
        let judgement = model.judgeSourceCopy(report(), receivedAt: at(offset), registry: registry(campaign()))
        #expect(judgement.verdict == verdict)
        #expect(judgement.reasons == reasons)
    }

    /// Receipt after the campaign's end: a click at the end, a trigger 7 days later, the report
    /// 24–48 h after that is in the model; up to the cut-off it is late.
    @Test(arguments: [
        (7 * day + 48 * hour, TimingModel.Verdict.accepted, [String]()),
        (7 * day + 48 * hour + second, .accepted, ["late"]),
        (7 * day + 30 * day, .accepted, ["late"]),
        (7 * day + 30 * day + second, .quarantined, ["outside_campaign_window"]),
    ])
    func receiptAfterTheEnd(offset: Int64, verdict: TimingModel.Verdict, reasons: [String]) {
        let end = at(10 * day)
        let judgement = model.judgeSourceCopy(report(), receivedAt: end.adding(milliseconds: offset), registry: registry(campaign()))
        #expect(judgement.verdict == verdict)
        #expect(judgement.reasons == reasons)
        #expect((judgement.campaign?.name == "Winter") == (verdict == .accepted))
    }

    @Test func unknownIdAndWrongDestination() {
        let r = registry(campaign())
        #expect(model.judgeSourceCopy(report(sourceID: 7), receivedAt: at(2 * day), registry: r).reasons == ["unknown_source_id"])
        #expect(model.judgeSourceCopy(report(destination: "other.example"), receivedAt: at(2 * day), registry: r).reasons == ["destination_mismatch"])
    }

    @Test func aReusedIdMeansTheCampaignOfItsTime() {
        let winter = campaign("Winter", starts: t0, ends: at(10 * day))
        let spring = campaign("Spring", starts: at(30 * day), ends: at(40 * day))
        let r = registry(winter, spring)
        #expect(model.judgeSourceCopy(report(), receivedAt: at(5 * day), registry: r).campaign?.name == "Winter")
        #expect(model.judgeSourceCopy(report(), receivedAt: at(35 * day), registry: r).campaign?.name == "Spring")
    }

    @Test func aSiteWithoutCampaignsIsUnverified() {
        #expect(model.judgeSourceCopy(report(), receivedAt: t0, registry: Registry()) == TimingModel.Judgement(.accepted, ["unverified_timing"]))
    }
}
