import Dispatch
import DurableFiles
import Foundation
import Locking
import LogConsumer
import Primitives
import Testing

@Suite struct RetryScheduleTests {
    @Test func waitsDoubleFromTheFirstUpToTheLongest() {
        let schedule = RetrySchedule(first: 0.5, longest: 30)
        #expect(schedule.delay(afterFailures: 0, jitter: 0) == 0)
        #expect(schedule.delay(afterFailures: 1, jitter: 0) == 0.5)
        #expect(schedule.delay(afterFailures: 2, jitter: 0) == 1)
        #expect(schedule.delay(afterFailures: 7, jitter: 0) == 30)
        #expect(schedule.delay(afterFailures: Int.max, jitter: 0) == 30)
        #expect(schedule.delay(afterFailures: -3, jitter: 0) == 0)
    }

    @Test func jitterTakesOffAtMostAQuarter() {
        let schedule = RetrySchedule(first: 1, longest: 8)
        for jitter in [0, 0.5, 0.999, 1, 7, -2] {
            let delay = schedule.delay(afterFailures: 4, jitter: jitter)
            #expect(delay > 6 && delay <= 8)
        }
    }
}

@Suite struct LogCursorTests {
    func file() -> DurableJSONFile<LogCursor?> {
        DurableJSONFile(path: NSTemporaryDirectory() + "cursor-" + UUID().uuidString + ".json", empty: nil)
    }

    @Test func aSavedCursorIsWhatTheNextStartReads() throws {
        let f = file()
        var cursor = try LogCursor.load(f, node: "a", target: "https://relay.example/in", logEnd: 100)
        #expect(cursor.streams.isEmpty)
        var position = cursor.position(of: "copies")
        position.advance(to: 60, records: 5, unreadable: 0)
        position.advance(to: 80, records: 2, unreadable: 1)
        cursor.streams["copies"] = position
        try f.save(cursor)
        let loaded = try LogCursor.load(f, node: "a", target: "https://relay.example/in", logEnd: 100)
        #expect(loaded.position(of: "copies") == LogPosition(offset: 80, records: 7, unreadable: 1))
        #expect(loaded.position(of: "other") == LogPosition())
    }

    /// Cursors written before the consumers shared one type still load, and are written the same way.
    @Test func theFormatOnDiskIsTheExportsOwn() throws {
        let f = file()
        let saved = #"{"node":"node-a","target":"http://127.0.0.1:8123/attribution","tables":{"pcm_reports":{"offset":4096,"rows":30,"unreadable":1}}}"#
        try saved.write(toFile: f.path, atomically: true, encoding: .utf8)
        let cursor = try LogCursor.load(f, node: "node-a", target: "http://127.0.0.1:8123/attribution", logEnd: 8192)
        #expect(cursor.position(of: "pcm_reports") == LogPosition(offset: 4096, records: 30, unreadable: 1))
        try f.save(cursor)
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: f.path))) as? [String: Any]
        let tables = written?["tables"] as? [String: [String: Int]]
        #expect(tables?["pcm_reports"] == ["offset": 4096, "rows": 30, "unreadable": 1])
        #expect(written?["streams"] == nil)
    }

    @Test func anotherTargetStartsOverAndAShorterLogToo() throws {
        let f = file()
        var cursor = LogCursor(node: "a", target: "http://ch/db")
        cursor.streams["t"] = LogPosition(offset: 500)
        try f.save(cursor)
        #expect(try LogCursor.load(f, node: "a", target: "http://other/db", logEnd: 1000).streams.isEmpty)
        #expect(try LogCursor.load(f, node: "a", target: "http://ch/db", logEnd: 499).streams.isEmpty)
        #expect(try LogCursor.load(f, node: "a", target: "http://ch/db", logEnd: 500).position(of: "t").offset == 500)
    }

    @Test func anotherNodesCursorIsRefused() throws {
        let f = file()
        try f.save(LogCursor(node: "a", target: "http://ch/db"))
        #expect(throws: LogCursor.LoadError.self) { try LogCursor.load(f, node: "b", target: "http://ch/db", logEnd: 0) }
        do {
            _ = try LogCursor.load(f, node: "b", target: "http://ch/db", logEnd: 0)
        } catch {
            #expect(error.description.contains("'a'") && error.description.contains(f.path.split(separator: "/").last.map(String.init) ?? "?"))
        }
        try "{not json".write(toFile: f.path, atomically: true, encoding: .utf8)
        #expect(throws: LogCursor.LoadError.self) { try LogCursor.load(f, node: "a", target: "http://ch/db", logEnd: 0) }
    }
}

@Suite struct StreamLagTests {
    let t0 = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
    func at(_ seconds: Double) -> Timestamp { Timestamp(millisecondsSinceEpoch: t0.millisecondsSinceEpoch + Int64(seconds * 1000)) }

    @Test func theOldestRecordSeenWaitingSetsTheLag() {
        var lag = StreamLag()
        #expect(lag.seconds(waiting: 10, now: at(5)) == 0, "never looked: nothing to say yet")
        lag.readToEnd(at: at(1))
        #expect(lag.seconds(waiting: 0, now: at(5)) == 0)
        // Records came after the last read to the end: at most that old.
        #expect(lag.seconds(waiting: 3, now: at(5)) == 4)
        lag.pending(since: at(0.5))
        #expect(lag.seconds(waiting: 3, now: at(5)) == 4.5)
        lag.caughtUp()
        #expect(lag.seconds(waiting: 3, now: at(5)) == 4)
        #expect(lag.seconds(waiting: 3, now: at(0)) == 0, "a clock that went back gives no negative lag")
    }
}

/// The follower's loop against a scripted consumer: what it does after each kind of turn, what an
/// operator reads about it, and that it stops. Tests wait on its observer, not on a timer.
@Suite struct LogFollowerTests {
    final class Script: LogConsumer, Sendable {
        let turns: Locked<[LogTurn]>
        let taken = Locked<[(LogTurn, DispatchTime)]>([])
        init(_ turns: [LogTurn]) { self.turns = Locked(turns) }

        func turn(_ follower: LogFollower) -> LogTurn {
            let turn = turns.withLock { $0.isEmpty ? LogTurn.idle : $0.removeFirst() }
            if turn == .failed { follower.noteFailure("HTTP 503") }
            if turn == .sent || turn == .sentFull { follower.noteAccepted([("table", .string("t"))]) }
            taken.withLock { $0.append((turn, .now())) }
            return turn
        }
    }

    final class Observed: Sendable {
        let seen = Locked<[LogTurn]>([])
        let signal = DispatchSemaphore(value: 0)
        let events = Locked<[String]>([])
        var observe: @Sendable (LogTurn) -> Void { { turn in self.seen.withLock { $0.append(turn) }; self.signal.signal() } }
        var announce: @Sendable (String, [(String, JSONValue)]) -> Void { { event, _ in self.events.withLock { $0.append(event) } } }

        func waitForTurns(_ count: Int) -> Bool {
            for _ in 0..<count where signal.wait(timeout: .now() + 30) != .success { return false }
            return true
        }
    }

    func follower(_ observed: Observed, interval: Double, retry: RetrySchedule = RetrySchedule(first: 0.001, longest: 0.002)) -> LogFollower {
        LogFollower(thread: "test-follower", events: "relay", interval: interval, retry: retry,
                    clock: { Timestamp(millisecondsSinceEpoch: 1_800_000_000_000) }, announce: observed.announce, observer: observed.observe)
    }

    @Test func aFullBatchIsFollowedAtOnceAndFailuresAreRetriedThenForgiven() {
        let observed = Observed()
        // An interval no test waits out: only full batches and failures may turn again before stop.
        let follower = follower(observed, interval: 600)
        let script = Script([.sentFull, .sentFull, .failed, .failed, .failed, .sentFull, .sent])
        follower.start(script)
        #expect(observed.waitForTurns(7))
        follower.stop()
        #expect(observed.seen.withLock { $0 } == [.sentFull, .sentFull, .failed, .failed, .failed, .sentFull, .sent])
        let health = follower.health
        #expect(health.failures == 3)
        #expect(health.failuresInARow == 0)
        #expect(health.batches == 4)
        #expect(health.lastError == "HTTP 503")
        #expect(health.lastErrorAt != nil)
        // The first failure of a run is announced, then the recovery; the rest show in the figures.
        #expect(observed.events.withLock { $0 } == ["relay_failed", "relay_resumed"])
    }

    @Test func failuresInARowWaitLonger() {
        let observed = Observed()
        let follower = follower(observed, interval: 600, retry: RetrySchedule(first: 0.02, longest: 0.08))
        let script = Script([.failed, .failed, .failed, .failed, .sentFull])
        follower.start(script)
        #expect(observed.waitForTurns(5))
        follower.stop()
        let times = script.taken.withLock { $0.map(\.1.uptimeNanoseconds) }
        let gaps = zip(times, times.dropFirst()).map { Double($1 - $0) / 1e9 }
        // 0.02, 0.04, 0.08, 0.08 less up to a quarter each.
        for (gap, longest) in zip(gaps, [0.02, 0.04, 0.08, 0.08]) { #expect(gap >= longest * 0.75) }
        #expect(follower.health.failures == 4)
    }

    @Test func stopEndsAWaitAtOnceAndCancelsWhatIsInFlight() {
        let observed = Observed()
        let follower = follower(observed, interval: 600)
        follower.start(Script([.idle]))
        #expect(observed.waitForTurns(1))
        let cancelled = Locked(false)
        let started = DispatchTime.now()
        // Idle, the follower waits its 600-s interval: stop ends the wait.
        follower.stop { cancelled.withLock { $0 = true } }
        #expect(Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9 < 30)
        #expect(cancelled.withLock { $0 })
        #expect(follower.isStopping)
        // A consumer's own wait ends with the follower too.
        let pausedAt = DispatchTime.now()
        follower.pause(600)
        #expect(Double(DispatchTime.now().uptimeNanoseconds - pausedAt.uptimeNanoseconds) / 1e9 < 1)
    }

    @Test func aFollowerNeverStartedStops() {
        let observed = Observed()
        follower(observed, interval: 1).stop()
        #expect(observed.seen.withLock { $0 }.isEmpty)
    }
}
