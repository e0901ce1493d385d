@testable import AppleAds
import Testing

/// The outbox's schedule: due calls by time from a heap, and one probe per pause while Apple's
/// API does not answer.
@Suite struct AppleAdsScheduleTests {
    static func takeAll(_ schedule: inout AppleAdsSchedule, now: Int64, inFlight: Int = 0, max: Int = 8) -> [UInt64] {
        schedule.takeDue(now: now, inFlight: inFlight, maxInFlight: max) { _, _ in true }
    }

    @Test func callsComeOutByDueTimeAtMostTheLimit() {
        var schedule = AppleAdsSchedule()
        var generator = SystemRandomNumberGenerator()
        var times: [(UInt64, Int64)] = []
        for id in 0..<1000 as Range<UInt64> {
            let at = Int64.random(in: 0..<10_000, using: &generator)
            times.append((id, at))
            schedule.schedule(id, at: at)
        }
        var taken: [UInt64] = []
        var now: Int64 = 0
        while taken.count < 1000 {
            let due = Self.takeAll(&schedule, now: now, max: 8)
            #expect(due.count <= 8)
            taken += due
            now += 7
        }
        let order = Dictionary(uniqueKeysWithValues: times)
        #expect(zip(taken, taken.dropFirst()).allSatisfy { order[$0]! <= order[$1]! })
        #expect(schedule.nextWake(inFlight: 0, maxInFlight: 8) == nil)
    }

    @Test func aPauseWithNothingScheduledWakesNoOne() {
        // A token that expired during a pause leaves the pause and no entry: nothing is due, ever.
        var schedule = AppleAdsSchedule()
        schedule.schedule(1, at: 0)
        #expect(Self.takeAll(&schedule, now: 0) == [1])
        schedule.apiAnswered(unavailable: true, now: 0)
        schedule.schedule(1, at: 30_000)
        #expect(schedule.takeDue(now: 100_000_000, inFlight: 0, maxInFlight: 8) { _, _ in false }.isEmpty)
        #expect(schedule.pause != nil && schedule.nextWake(inFlight: 0, maxInFlight: 8) == nil)
    }

    @Test func staleEntriesAreDroppedNotCalled() {
        var schedule = AppleAdsSchedule()
        schedule.schedule(1, at: 10)
        schedule.schedule(1, at: 20)  // rescheduled: the entry at 10 no longer stands
        schedule.schedule(2, at: 15)
        let due = schedule.takeDue(now: 30, inFlight: 0, maxInFlight: 8) { id, at in id != 1 || at == 20 }
        #expect(due == [2, 1])
    }

    @Test func anUnavailableAPIPausesEveryCallThenOneProbeGoes() {
        var schedule = AppleAdsSchedule()
        for id in 0..<20_000 as Range<UInt64> { schedule.schedule(id, at: 0) }
        #expect(Self.takeAll(&schedule, now: 0).count == 8)
        // The first answer: no answer at all. Every call waits 30 s; the other seven in flight add nothing.
        for _ in 0..<8 { schedule.apiAnswered(unavailable: true, now: 100) }
        #expect(schedule.pause == .init(until: 30_100, failures: 1))
        #expect(Self.takeAll(&schedule, now: 30_099).isEmpty)
        #expect(schedule.nextWake(inFlight: 0, maxInFlight: 8) == 30_100)
        // While the probe is out, its answer is what to wait for, not a time.
        #expect(schedule.nextWake(inFlight: 1, maxInFlight: 8) == nil)
        // When the pause ends, one probe; none beside it while it is in flight.
        #expect(Self.takeAll(&schedule, now: 30_100).count == 1)
        #expect(Self.takeAll(&schedule, now: 30_100, inFlight: 1).isEmpty)
        schedule.apiAnswered(unavailable: true, now: 30_200)
        #expect(schedule.pause == .init(until: 90_200, failures: 2))
        // Backing off to 15 minutes at most, whatever the length of the outage.
        var now: Int64 = 90_200
        for _ in 0..<20 {
            #expect(Self.takeAll(&schedule, now: now).count == 1)
            schedule.apiAnswered(unavailable: true, now: now)
            now = schedule.pause!.until
        }
        #expect(schedule.pause!.until - (now - 15 * 60_000) == 15 * 60_000)
        // An answer, even a 404, resumes every call.
        #expect(Self.takeAll(&schedule, now: now).count == 1)
        schedule.apiAnswered(unavailable: false, now: now)
        #expect(schedule.pause == nil)
        #expect(Self.takeAll(&schedule, now: now).count == 8)
    }

    @Test(arguments: [(nil, true, true), (429, true, true), (500, true, true), (503, true, true), (200, false, true),
                      (200, true, false), (404, true, false), (400, true, false), (401, true, false)] as [(Int?, Bool, Bool)])
    func whatMeansTheAPIIsUnavailable(status: Int?, readable: Bool, unavailable: Bool) {
        #expect(AppleAdsCallPolicy.meansUnavailable(status: status, recordReadable: readable) == unavailable)
    }
}
