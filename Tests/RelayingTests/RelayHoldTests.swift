import Foundation
import Locking
import LogConsumer
import Primitives
import RecordLog
import Relays
import Testing
@testable import Relaying

/// What holds a delivery back and what it sends again: an admin's pause, a destination marked
/// dead after failing for days, a replayed period, each kept across a restart; and the copies
/// sent several at once. The destination is a script here (`Script`), so that each answer and
/// each batch is the test's to choose and see; `RelayDeliveryTests` does the same over HTTP.
@Suite struct RelayHoldTests {
    typealias Setup = RelayDeliveryTests.Setup
    typealias Turns = RelayDeliveryTests.Turns

    /// A destination that answers as `answer` says (when an attempt is finished), and keeps every
    /// request and the most attempts it had in flight at once.
    final class Script: RelayTransport {
        let requests = Locked<[RelayRequest]>([])
        let inFlight = Locked((now: 0, most: 0))
        let answer: Locked<@Sendable (RelayRequest) -> RelayExchange>

        init(_ answer: @escaping @Sendable (RelayRequest) -> RelayExchange = { _ in .answered(status: 200, retryAfter: nil, bodyStart: "") }) {
            self.answer = Locked(answer)
        }

        func post(_ request: RelayRequest) -> RelayExchange {
            requests.withLock { $0.append(request) }
            return answer.withLock { $0 }(request)
        }

        func begin(_ request: RelayRequest) -> RelayAttempt {
            inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            return RelayAttempt(request: request)
        }

        func finish(_ attempt: RelayAttempt) -> RelayExchange {
            inFlight.withLock { $0.now -= 1 }
            return post(attempt.request)
        }

        func cancelAll() {}

        var bodies: [[UInt8]] { requests.withLock { $0.map(\.body) } }

        func id(_ request: RelayRequest) -> String { request.headers.first { $0.0 == "X-Attribution-Delivery" }?.1 ?? "" }
    }

    /// A clock the test moves.
    final class Clock: Sendable {
        let now = Locked(Timestamp(millisecondsSinceEpoch: 1_795_000_000_000))
        var read: @Sendable () -> Timestamp { { self.now.withLock { $0 } } }
        func advance(seconds: Double) { now.withLock { $0 = $0.adding(milliseconds: Int64(seconds * 1000)) } }
    }

    static func delivery(_ setup: Setup, _ script: Script, turns: Turns, clock: Clock = Clock(), connections: Int = 4,
                         deadAfter: Double = RelayDelivery.defaultDeadAfter) -> RelayDelivery {
        RelayDeliveryTests.delivery(setup, url: "https://copies.partner.example/skan", turns: turns, transport: script,
                                    connections: connections, clock: clock.read, deadAfter: deadAfter,
                                    resolve: { _ in [IPAddress("93.184.215.14")!] })
    }

    static let unreachable: @Sendable (RelayRequest) -> RelayExchange = { _ in .failed("connection refused") }

    /// The turns that ended after `count` had: a wait for what a change leads to.
    static func failedTurns(_ turns: Turns) -> Int { turns.all.withLock { $0.filter { $0 == .failed }.count } }

    @Test func copiesGoSeveralAtOnceInTheLogsOrderAndNoMore() throws {
        let setup = try RelayDeliveryTests.log(copies: 10)
        let script = Script()
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns, connections: 4)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 10 })
        delivery.stop()
        #expect(script.inFlight.withLock { $0 } == (now: 0, most: 4))
        #expect(script.bodies == setup.bodies)
        setup.store.close()
    }

    @Test func aCopyToTryAgainInAWindowSendsItAndWhatFollowedItAgainWithTheSameIDs() throws {
        let setup = try RelayDeliveryTests.log(copies: 8)
        let failedOnce = Locked(false)
        // The third copy is answered 503 the first time.
        let third = setup.bodies[2]
        let script = Script { request in
            let firstTime = request.body == third && failedOnce.withLock { failed -> Bool in
                defer { failed = true }
                return !failed
            }
            if firstTime {
                return .answered(status: 503, retryAfter: nil, bodyStart: "")
            }
            return .answered(status: 200, retryAfter: nil, bodyStart: "")
        }
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns, connections: 4)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 8 })
        delivery.stop()
        let requests = script.requests.withLock { $0 }
        try #require(requests.count == 12)
        // 0 1 2 3 in flight, 4 and 5 started as 0 and 1 were taken; 2 fails, and 3 4 5 went too.
        // Then 2 alone, and the window grows back: 3, 4 5, 6 7. Each repeat with its first id.
        #expect(requests.map(\.body) == [0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7].map { setup.bodies[$0] })
        #expect((2...5).allSatisfy { script.id(requests[$0]) == script.id(requests[$0 + 4]) })
        #expect(Set(requests.map(script.id)).count == 8)
        setup.store.close()
    }

    @Test func aCopyThatKeepsFailingHoldsTheCursorWhateverIsInFlightBesideIt() throws {
        let setup = try RelayDeliveryTests.log(copies: 8)
        let (third, fourth) = (setup.bodies[2], setup.bodies[3])
        let refusing = Locked(true)
        let thirdFailed = Locked(false)
        // The third copy fails once (so that the next turn starts with it, alone, and takes it),
        // and the fourth until told otherwise: the answer that empties the window must not move
        // the cursor past the copy started next.
        let script = Script { request in
            if request.body == third, !thirdFailed.withLock({ failed in defer { failed = true }; return failed }) {
                return .failed("connection reset")
            }
            return request.body == fourth && refusing.withLock({ $0 }) ? .failed("timed out") : .answered(status: 200, retryAfter: nil, bodyStart: "")
        }
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns, connections: 4)
        delivery.start()
        #expect(turns.until { Self.failedTurns(turns) >= 6 })
        #expect(delivery.status.delivered == 3, "the three before it, and no further: \(delivery.status.delivered)")
        refusing.withLock { $0 = false }
        #expect(turns.until { delivery.status.delivered == 8 })
        delivery.stop()
        #expect(Set(script.bodies) == Set(setup.bodies))
        setup.store.close()
    }

    @Test func aPauseHoldsAcrossARestartUntilResumed() throws {
        let setup = try RelayDeliveryTests.log(copies: 3)
        let script = Script()
        let turns = Turns()
        let first = Self.delivery(setup, script, turns: turns)
        try first.pause()
        first.start()
        // A turn or two pass while paused.
        #expect(turns.until { turns.all.withLock { $0.count } >= 2 })
        first.stop()
        #expect(script.bodies.isEmpty)
        let second = Self.delivery(setup, script, turns: turns)
        #expect(second.status.paused, "the pause is kept in data/relays/partner.state.json")
        second.start()
        try second.resume()
        #expect(turns.until { second.status.delivered == 3 })
        second.stop()
        #expect(!second.status.paused && script.bodies == setup.bodies)
        setup.store.close()
    }

    @Test func aDestinationFailingForDaysIsMarkedDeadKeptDeadAcrossARestartAndGoesOnWhereItStoppedWhenResumed() throws {
        let setup = try RelayDeliveryTests.log(copies: 4)
        let script = Script(Self.unreachable)
        let clock = Clock()
        let turns = Turns()
        let first = Self.delivery(setup, script, turns: turns, clock: clock, deadAfter: 3 * 86_400)
        first.start()
        #expect(turns.until { Self.failedTurns(turns) >= 2 })
        let since = try #require(first.status.failingSince)
        #expect(first.status.deadSince == nil)
        // Three days and a second later, the next failure marks it dead; then nothing is tried.
        clock.advance(seconds: 3 * 86_400 + 1)
        #expect(turns.until { first.status.deadSince != nil })
        let tried = script.requests.withLock { $0.count }
        let idle = turns.all.withLock { $0.count }
        #expect(turns.until { turns.all.withLock { $0.count } >= idle + 3 })
        #expect(script.requests.withLock { $0.count } == tried, "a dead destination is not tried")
        first.stop()
        #expect(first.status.failingSince == since)
        // Its cursor and its death survive a restart.
        script.answer.withLock { $0 = { _ in .answered(status: 200, retryAfter: nil, bodyStart: "") } }
        let second = Self.delivery(setup, script, turns: turns, clock: clock, deadAfter: 3 * 86_400)
        #expect(second.status.deadSince != nil && second.status.delivered == 0)
        second.start()
        try second.resume()
        #expect(turns.until { second.status.delivered == 4 })
        second.stop()
        #expect(second.status.deadSince == nil && second.status.failingSince == nil)
        #expect(Array(script.bodies.suffix(4)) == setup.bodies, "from where it stopped: the first copy first")
        setup.store.close()
    }

    @Test func aDestinationThatTakesACopyIsNoLongerFailing() throws {
        let setup = try RelayDeliveryTests.log(copies: 2)
        let calls = Locked(0)
        let script = Script { _ in
            calls.withLock { $0 += 1; return $0 } <= 2 ? .failed("timed out") : .answered(status: 200, retryAfter: nil, bodyStart: "")
        }
        let clock = Clock()
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns, clock: clock, connections: 1)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 2 })
        delivery.stop()
        #expect(delivery.status.failingSince == nil && delivery.status.deadSince == nil)
        setup.store.close()
    }

    @Test func aReplaySendsThePeriodAgainWithTheFirstDeliveryIDsAndEnds() throws {
        let setup = try RelayDeliveryTests.log(copies: 6)
        let script = Script()
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 6 })
        let firstIDs = script.requests.withLock { $0.map(script.id) }
        // The records' times are the log's: the whole period around now, then a period after it.
        let now = Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000))
        #expect(try delivery.replay(since: now.adding(milliseconds: -3_600_000), until: now.adding(milliseconds: 3_600_000)))
        #expect(turns.until { script.requests.withLock { $0.count } == 12 && delivery.status.replay == nil })
        let again = script.requests.withLock { Array($0.suffix(6)) }
        #expect(again.map(\.body) == setup.bodies && again.map(script.id) == firstIDs)
        #expect(delivery.status.delivered == 6, "the live count is the cursor's")
        #expect(try delivery.replay(since: now.adding(milliseconds: 3_600_000), until: now.adding(milliseconds: 7_200_000)))
        #expect(turns.until { delivery.status.replay == nil })
        delivery.stop()
        #expect(script.requests.withLock { $0.count } == 12, "nothing arrived in that period")
        setup.store.close()
    }

    @Test func aReplayIsKeptAcrossARestartAndOneAtATime() throws {
        let setup = try RelayDeliveryTests.log(copies: 3)
        let script = Script()
        let turns = Turns()
        let first = Self.delivery(setup, script, turns: turns)
        try first.pause()
        let far = (Timestamp(millisecondsSinceEpoch: 0), Timestamp(millisecondsSinceEpoch: 4_000_000_000_000))
        #expect(try first.replay(since: far.0, until: far.1))
        #expect(try !first.replay(since: far.0, until: far.1), "a second replay waits for the first")
        let second = Self.delivery(setup, script, turns: turns)
        #expect(second.status.replay?.since == far.0 && second.status.paused)
        second.start()
        try second.resume()
        #expect(turns.until { second.status.replay == nil && second.status.delivered == 3 })
        second.stop()
        // The live copies, then the same again.
        #expect(script.bodies == setup.bodies + setup.bodies)
        #expect(try second.cancelReplay() == false)
        setup.store.close()
    }

    @Test func aHoldForAnotherURLIsNotThisDestinations() throws {
        let setup = try RelayDeliveryTests.log(copies: 1)
        let turns = Turns()
        let paused = Self.delivery(setup, Script(), turns: turns)
        try paused.pause()
        let elsewhere = RelayDeliveryTests.delivery(setup, url: "https://other.partner.example/", turns: turns, transport: Script(),
                                                    resolve: { _ in [IPAddress("93.184.215.14")!] })
        #expect(!elsewhere.status.paused)
        setup.store.close()
    }

    @Test func anUnreadableHoldStopsTheDeliveryRatherThanForgetAPause() throws {
        let setup = try RelayDeliveryTests.log(copies: 1)
        try Array("{not json".utf8).withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: RelayDelivery.holdPath(directory: setup.directory, name: "partner"))) }
        let script = Script()
        let turns = Turns()
        let delivery = Self.delivery(setup, script, turns: turns)
        delivery.start()
        delivery.stop()
        #expect(script.bodies.isEmpty && turns.all.withLock { $0.isEmpty })
        setup.store.close()
    }
}
