import DurableFiles
import Foundation
import Locking
import LogConsumer
import Primitives
import RecordLog
import Relays

/// Relays copies to one destination from the log: a `LogConsumer` with a durable cursor of its
/// own, run by a `LogFollower` on a thread of its own, so that a slow or dead destination holds
/// up nothing but itself. The log is the backlog: memory does not grow with it, and a restart,
/// a SIGKILL included, goes on from the saved cursor.
///
/// A turn reads the records after the cursor (at most `scanLimit` of them) and sends the copies
/// the destination takes in the log's order, up to `connections` in flight. Each answer
/// (`RelayOutcome`): delivered and refused copies move the cursor on, and it is saved at the end
/// of the turn; a copy to try again stops the turn there, and the next turn sends it again (and
/// any of its window sent after it) after the retry schedule's wait, or the `Retry-After` asked
/// for. A crash before the save sends the turn's copies again, with the same delivery ids: at
/// least once.
///
/// What an admin decides and how long the destination has been failing are kept beside the
/// cursor (`RelayHold`): a pause, a destination marked dead after `deadAfter` seconds of
/// failures, and a period to send again, which the turns walk after the live copies.
public final class RelayDelivery: Sendable {
    /// What an operator reads about a destination.
    public struct Status: Sendable, Equatable {
        public var name: String
        public var url: String
        public var delivered = 0
        public var refused = 0
        /// Copies skipped because a record could not be read.
        public var unreadable = 0
        /// Times the cursor was found behind the oldest record the log keeps (retention removed
        /// segments it had not delivered): the copies in them were never delivered.
        public var expirations = 0
        /// A copy is waiting to be tried again.
        public var retrying = false
        /// Seconds the oldest copy not yet handed on has waited (0 when caught up).
        public var lagSeconds: Double = 0
        public var lastError: String?
        public var lastErrorAt: Timestamp?
        /// The HTTP status of the last failure or refusal, when there was one.
        public var lastStatus: Int?
        public var failuresInARow = 0
        public var paused = false
        /// Failing since (no copy taken since then), and marked dead since.
        public var failingSince: Timestamp?
        public var deadSince: Timestamp?
        public var replay: RelayReplay?
        /// The last refusals, newest last: the status and the start of what the destination said.
        public var refusals: [Refusal] = []

        /// Nothing delivered yet: a destination whose delivery has not started.
        public init(name: String, url: String) {
            self.name = name
            self.url = url
        }
    }

    public struct Refusal: Sendable, Equatable {
        public var recordID: UInt64
        public var status: Int
        public var at: Timestamp
        public var bodyStart: String
    }

    /// Records read per turn at most, copies or not, so that a turn over a long stretch of other
    /// records ends and saves its cursor.
    public static let scanLimit = 4096
    /// Refusals kept for the API.
    public static let refusalsKept = 16
    /// Days a destination may fail before it is marked dead, unless told otherwise.
    public static let defaultDeadAfter: Double = 3 * 86_400

    public let destination: RelayDestination
    private let store: RecordLog
    private let node: String
    private let select: @Sendable (RecordLog.RecordView) -> RelayCopy?
    private let transport: any RelayTransport
    private let resolve: @Sendable (String) -> [IPAddress]?
    private let clock: @Sendable () -> Timestamp
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let deadAfter: Double
    private let connections: Int
    private let file: DurableJSONFile<LogCursor?>
    private let holdFile: DurableJSONFile<RelayHold?>
    private let follower: LogFollower
    private let state: Locked<State>

    private struct State: Sendable {
        var cursor: LogCursor
        var hold: RelayHold
        var status: Status
        var lag = StreamLag()
        var stopped: String?
        /// Copies in flight at once now: `connections`, down to one after a copy is to be tried
        /// again, doubling back with each window's worth taken whole. A destination that fails one
        /// attempt in two still moves on: a window always starting with the copy it refuses would not.
        var window: Int
    }

    static let stream = "copies"

    /// The cursor's file for the destination `name`, in `directory` (`data/relays/`).
    public static func cursorPath(directory: String, name: String) -> String { directory + "/" + name + ".json" }
    /// The file of its `RelayHold`.
    public static func holdPath(directory: String, name: String) -> String { directory + "/" + name + ".state.json" }

    /// `deadAfter`: seconds of failures after which the destination is marked dead.
    /// `connections`: copies in flight at once, at most.
    public init(destination: RelayDestination, store: RecordLog, node: String, directory: String,
                select: @escaping @Sendable (RecordLog.RecordView) -> RelayCopy?, transport: any RelayTransport,
                resolve: @escaping @Sendable (String) -> [IPAddress]? = HostResolver.addresses(of:),
                clock: @escaping @Sendable () -> Timestamp, interval: Double = 1, retry: RetrySchedule = RetrySchedule(first: 1, longest: 300),
                deadAfter: Double = RelayDelivery.defaultDeadAfter, connections: Int = 4,
                announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void,
                observer: (@Sendable (LogTurn) -> Void)? = nil) {
        self.destination = destination
        self.store = store
        self.node = node
        self.select = select
        self.transport = transport
        self.resolve = resolve
        self.clock = clock
        self.announce = announce
        self.deadAfter = deadAfter
        self.connections = max(1, connections)
        file = DurableJSONFile(path: Self.cursorPath(directory: directory, name: destination.name), empty: nil, mode: 0o600)
        holdFile = DurableJSONFile(path: Self.holdPath(directory: directory, name: destination.name), empty: nil, mode: 0o600)
        let name = destination.name
        // At nice 19: what the relays send costs CPU (most of it in URLSession's own threads, which
        // this thread feeds), and intake comes first; a relay takes the cores intake leaves.
        follower = LogFollower(thread: "relay-" + name, events: "relay", interval: interval, retry: retry, priority: .background, clock: clock,
                               announce: { event, fields in announce(event, [("destination", .string(name))] + fields) },
                               observer: observer)
        var initial = State(cursor: LogCursor(node: node, target: destination.url), hold: RelayHold(url: destination.url),
                            status: Status(name: destination.name, url: destination.url), window: max(1, connections))
        do {
            initial.cursor = try LogCursor.load(file, node: node, target: destination.url, logEnd: store.durablePrefix.end)
        } catch {
            initial.stopped = error.description
        }
        do {
            // A hold made for another URL is not this destination's.
            if let hold = try holdFile.load(), hold.url == destination.url { initial.hold = hold }
        } catch {
            // Unread, a pause could be lost: the delivery does not start rather than send what an admin held back.
            initial.stopped = "\(holdFile.path) is unreadable: \(error)"
        }
        let position = initial.cursor.position(of: Self.stream)
        initial.status.delivered = position.records
        initial.status.unreadable = position.unreadable
        state = Locked(initial)
    }

    public func start() {
        if let reason = state.withLock({ $0.stopped }) {
            announce("relay_stopped", [("destination", .string(destination.name)), ("reason", .string(reason))])
            return
        }
        follower.start(Consumer(delivery: self))
    }

    /// Stops after the attempt in flight, which is cancelled: its copy goes again after a start.
    public func stop() {
        follower.stop(cancel: transport.cancelAll)
        transport.invalidate()
    }

    /// Holds the delivery back, across restarts, until `resume`.
    public func pause() throws {
        try changeHold { $0.paused = true }
    }

    /// Ends a pause, and a destination's death: it is tried again at once, from its cursor, and
    /// its failures are counted afresh. Wakes the thread only when it was held: a wake left over
    /// would cut a later wait short, a destination's `Retry-After` included.
    public func resume() throws {
        let held = try changeHold { hold in
            defer { (hold.paused, hold.deadSince, hold.failingSince) = (false, nil, nil) }
            return hold.paused || hold.deadSince != nil
        }
        if held { follower.wake() }
    }

    /// Sends again every copy the destination takes that arrived in `[since, until)` and is still
    /// in the log. False, and nothing changes, when a replay is under way.
    public func replay(since: Timestamp, until: Timestamp) throws -> Bool {
        let end = store.durablePrefix.end
        let start = store.segments.first?.base ?? 0
        let now = clock()
        let asked = try changeHold { hold -> Bool in
            guard hold.replay == nil else { return false }
            hold.replay = RelayReplay(since: since, until: until, askedAt: now, offset: start, end: end)
            return true
        }
        if asked {
            announce("relay_replay_asked", [("destination", .string(destination.name)), ("since", .string(since.rfc3339)),
                                            ("until", .string(until.rfc3339))])
            follower.wake()
        }
        return asked
    }

    /// Ends a replay under way. False when there was none.
    public func cancelReplay() throws -> Bool {
        try changeHold { hold -> Bool in
            defer { hold.replay = nil }
            return hold.replay != nil
        }
    }

    /// Changes the hold and saves it, under the lock: two changes never save out of order.
    private func changeHold<T>(_ change: (inout RelayHold) -> T) throws -> T {
        try state.withLock { s throws -> T in
            var hold = s.hold
            let result = change(&hold)
            if hold != s.hold {
                try holdFile.save(hold)
                s.hold = hold
            }
            return result
        }
    }

    public var status: Status {
        let s = state.withLock { $0 }
        let health = follower.health
        var status = s.status
        status.lastError = health.lastError
        status.lastErrorAt = health.lastErrorAt
        status.failuresInARow = health.failuresInARow
        status.paused = s.hold.paused
        status.failingSince = s.hold.failingSince
        status.deadSince = s.hold.deadSince
        status.replay = s.hold.replay
        let behind = s.cursor.position(of: Self.stream).offset < store.durablePrefix.end
        status.lagSeconds = s.lag.seconds(waiting: behind ? 1 : 0, now: clock())
        return status
    }

    /// The offset the cursor has passed.
    public var relayedThrough: Int { state.withLock { $0.cursor.position(of: Self.stream).offset } }

    private final class Consumer: LogConsumer {
        let delivery: RelayDelivery
        init(delivery: RelayDelivery) { self.delivery = delivery }
        func turn(_ follower: LogFollower) -> LogTurn { delivery.turn(follower) }
    }

    /// What one walk over the log sent, and where it got to.
    private struct Pass {
        var reached: Int
        var delivered = 0
        var refused = 0
        var scanned = 0
        var outcome: LogTurn = .sent
        var retryAfter: Double?
        var full: Bool { scanned >= RelayDelivery.scanLimit && outcome == .sent }
    }

    private func turn(_ follower: LogFollower) -> LogTurn {
        let (start, hold) = state.withLock { ($0.cursor.position(of: Self.stream), $0.hold) }
        var position = start
        guard !hold.paused, hold.deadSince == nil else { return .idle }
        let firstKept = store.segments.first?.base
        // Retention removed segments this destination had not taken all of: said, counted, and
        // the cursor moved to what is kept. A retry lasts as long as the log keeps its copy.
        if let firstKept, position.offset < firstKept {
            noteExpired(from: position.offset, to: firstKept)
            position.offset = firstKept
            let saved = state.withLock { s -> LogCursor in
                s.cursor.streams[Self.stream] = position
                return s.cursor
            }
            try? file.save(saved)
        }
        let readAt = clock()
        let end = store.durablePrefix.end
        var checked = false
        var live = Pass(reached: position.offset)
        if position.offset < end {
            live = send(from: position.offset, through: end, live: true, checked: &checked, follower) { _ in true }
            if live.reached > position.offset {
                var next = position
                next.advance(to: live.reached, records: live.delivered, unreadable: 0)
                let saved = state.withLock { s -> LogCursor in
                    s.cursor.streams[Self.stream] = next
                    s.status.delivered += live.delivered
                    s.status.refused += live.refused
                    return s.cursor
                }
                do {
                    try file.save(saved)
                } catch {
                    // The copies went; the cursor did not: they go again after a restart, as after a crash.
                    announce("relay_cursor_not_saved", [("destination", .string(destination.name)), ("reason", .string("\(error)"))])
                }
            }
        }
        state.withLock { s in
            s.status.retrying = live.outcome == .failed
            if live.outcome != .failed {
                s.lag.caughtUp()
                if !live.full { s.lag.readToEnd(at: readAt) }
            }
        }
        var outcome = live
        // A replay's turn comes once the live copies are caught up: it never holds them back.
        if live.outcome == .sent, !live.full, var replay = hold.replay {
            replay.offset = max(replay.offset, firstKept ?? 0)
            var pass = Pass(reached: replay.offset)
            if replay.offset < replay.end {
                pass = send(from: replay.offset, through: replay.end, live: false, checked: &checked, follower) { copy in
                    replay.since <= copy.receivedAt && copy.receivedAt < replay.until
                }
            }
            replay.offset = max(replay.offset, pass.reached)
            replay.sent += pass.delivered + pass.refused
            state.withLock { $0.status.retrying = pass.outcome == .failed }
            let finished = replay.isDone
            let kept = (try? changeHold { hold -> Bool in
                // Unless an admin ended it meanwhile, or ended it and asked for another.
                guard let current = hold.replay, current.askedAt == replay.askedAt, current.since == replay.since,
                      current.until == replay.until, current.start == replay.start else { return false }
                hold.replay = finished ? nil : replay
                return true
            }) ?? false
            if finished, kept {
                announce("relay_replay_done", [("destination", .string(destination.name)), ("copies", .number(String(replay.sent)))])
            }
            outcome = pass
        }
        noteHealth(failed: outcome.outcome == .failed)
        if outcome.outcome != .failed, live.delivered + live.refused > 0 || outcome.delivered + outcome.refused > 0 { follower.noteAccepted() }
        if let retryAfter = outcome.retryAfter { return .retryAfter(retryAfter) }
        if outcome.outcome == .sent, live.full || outcome.full { return .sentFull }
        return outcome.outcome
    }

    /// One walk over `[from, through)`: the copies the destination takes for which `accept` holds,
    /// up to `connections` in flight, a new one started as the oldest is answered, until one is to
    /// be tried again, the scan limit, or the end. Answers are taken in the log's order.
    private func send(from start: Int, through end: Int, live: Bool, checked: inout Bool, _ follower: LogFollower,
                      accept: (RelayCopy) -> Bool) -> Pass {
        var pass = Pass(reached: start)
        var inFlight: [(copy: RelayCopy, end: Int, attempt: RelayAttempt)] = []
        var size = state.withLock { $0.window }
        // Answers taken whole in a row since the window last grew.
        var streak = 0
        /// The end of the last record handled: passed, or its copy started.
        var tail = start
        // What follows a copy to try again goes again with it: the window is then one.
        defer { state.withLock { $0.window = size } }
        /// Takes the oldest attempt's answer; false when the walk stops there.
        func settleOldest() -> Bool {
            let oldest = inFlight.removeFirst()
            let answer = transport.finish(oldest.attempt)
            var failure: String?
            switch answer {
            case .answered(let status, let retryAfterHeader, let bodyStart):
                switch RelayOutcome.of(status: status, retryAfter: retryAfterHeader, now: clock()) {
                case .delivered:
                    pass.delivered += 1
                case .refused(let status):
                    pass.refused += 1
                    noteRefusal(oldest.copy, status: status, bodyStart: bodyStart)
                case .retry(let after):
                    state.withLock { $0.status.lastStatus = status }
                    pass.retryAfter = after
                    failure = "HTTP \(status)"
                }
            case .failed(let reason):
                failure = reason
            }
            if let failure {
                follower.noteFailure(failure)
                pass.outcome = .failed
                size = 1
                // The others go again, with this one, after the wait: their answers are not taken.
                for other in inFlight { _ = transport.finish(other.attempt) }
                inFlight.removeAll()
                return false
            }
            pass.reached = inFlight.isEmpty ? tail : oldest.end
            streak += 1
            if streak >= size, size < connections {
                size = min(connections, size * 2)
                streak = 0
            }
            return true
        }
        store.scanEveryRecord(from: start, through: end) { record in
            guard !follower.isStopping else { pass.outcome = .idle; return false }
            // Retention removed a segment between the check and this read: the walk starts at the
            // first one kept, past copies never delivered. Said and counted the same way.
            if live, pass.scanned == 0, record.start > start {
                noteExpired(from: start, to: record.start)
            }
            pass.scanned += 1
            guard let copy = select(record), accept(copy) else {
                tail = record.end
                if inFlight.isEmpty { pass.reached = record.end }
                return pass.scanned < Self.scanLimit
            }
            if !checked {
                checked = true
                if let reason = addressRefusal() {
                    follower.noteFailure(reason)
                    pass.outcome = .failed
                    return false
                }
            }
            // Room first: an answer taken now may move the cursor up to `tail`, which must not
            // yet include this copy.
            while inFlight.count >= size {
                guard settleOldest() else { return false }
            }
            tail = record.end
            if live, inFlight.isEmpty { state.withLock { $0.lag.pending(since: copy.receivedAt) } }
            let request = RelayRequest(url: destination.url,
                                       headers: RelayHeaders.all(for: copy, node: node, destination: destination.name,
                                                                 secret: destination.secret, now: clock()),
                                       body: copy.body)
            inFlight.append((copy, record.end, transport.begin(request)))
            return pass.scanned < Self.scanLimit
        }
        if pass.outcome == .sent {
            while !inFlight.isEmpty {
                guard settleOldest() else { break }
            }
        } else {
            // Stopping: what is in flight is cancelled by the stop, and goes again after a start.
            for other in inFlight { _ = transport.finish(other.attempt) }
        }
        return pass
    }

    /// Keeps when the destination began failing, and marks it dead once that is `deadAfter` ago.
    private func noteHealth(failed: Bool) {
        let now = clock()
        var died = false
        _ = try? changeHold { hold in
            if !failed {
                // Caught up or taking copies: not failing, whatever it did before.
                hold.failingSince = nil
                return
            }
            guard let since = hold.failingSince else { hold.failingSince = now; return }
            if hold.deadSince == nil, Double(now.millisecondsSinceEpoch - since.millisecondsSinceEpoch) / 1000 >= deadAfter {
                hold.deadSince = now
                died = true
            }
        }
        if died {
            announce("relay_destination_dead", [("destination", .string(destination.name)),
                                                ("failing_since", .string(state.withLock { $0.hold.failingSince?.rfc3339 ?? "" }))])
        }
    }

    private func noteExpired(from: Int, to: Int) {
        announce("relay_copies_expired", [("destination", .string(destination.name)), ("from_offset", .number(String(from))),
                                          ("to_offset", .number(String(to)))])
        state.withLock { $0.status.expirations += 1 }
    }

    /// Why the destination's host may not be sent to now (`HostResolver`), or nil.
    private func addressRefusal() -> String? {
        guard let url = try? RelayURL.parse(destination.url, allowHTTP: true, allowInternal: true) else { return "not a URL" }
        return HostResolver.refusal(of: url.host, allowInternal: destination.internal, resolve: resolve)
    }

    private func noteRefusal(_ copy: RelayCopy, status: Int, bodyStart: String) {
        let refusal = Refusal(recordID: copy.recordID, status: status, at: clock(), bodyStart: String(bodyStart.prefix(512)))
        state.withLock { s in
            s.status.refusals.append(refusal)
            if s.status.refusals.count > Self.refusalsKept { s.status.refusals.removeFirst() }
            s.status.lastStatus = status
        }
        announce("relay_copy_refused", [("destination", .string(destination.name)), ("record", .number(String(copy.recordID))),
                                        ("status", .number(String(status))), ("body", .string(String(bodyStart.prefix(200))))])
    }
}
