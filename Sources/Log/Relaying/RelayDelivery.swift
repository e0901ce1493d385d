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
/// the destination takes, one after another, in the log's order. Each answer (`RelayOutcome`):
/// delivered and refused copies move the cursor on, and it is saved at the end of the turn; a
/// copy to try again stops the turn there, and the next turn sends it again after the retry
/// schedule's wait, or the `Retry-After` asked for. A crash before the save sends the turn's
/// copies again, with the same delivery ids: at least once.
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
        /// The last refusals, newest last: the status and the start of what the destination said.
        public var refusals: [Refusal] = []
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

    public let destination: RelayDestination
    private let store: RecordLog
    private let node: String
    private let select: @Sendable (RecordLog.RecordView) -> RelayCopy?
    private let transport: any RelayTransport
    private let resolve: @Sendable (String) -> [IPAddress]?
    private let clock: @Sendable () -> Timestamp
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let file: DurableJSONFile<LogCursor?>
    private let follower: LogFollower
    private let state: Locked<State>

    private struct State: Sendable {
        var cursor: LogCursor
        var status: Status
        var lag = StreamLag()
        var stopped: String?
    }

    static let stream = "copies"

    /// The cursor's file for the destination `name`, in `directory` (`data/relays/`).
    public static func cursorPath(directory: String, name: String) -> String { directory + "/" + name + ".json" }

    public init(destination: RelayDestination, store: RecordLog, node: String, directory: String,
                select: @escaping @Sendable (RecordLog.RecordView) -> RelayCopy?, transport: any RelayTransport,
                resolve: @escaping @Sendable (String) -> [IPAddress]? = HostResolver.addresses(of:),
                clock: @escaping @Sendable () -> Timestamp, interval: Double = 1, retry: RetrySchedule = RetrySchedule(first: 1, longest: 300),
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
        file = DurableJSONFile(path: Self.cursorPath(directory: directory, name: destination.name), empty: nil, mode: 0o600)
        let name = destination.name
        follower = LogFollower(thread: "relay-" + name, events: "relay", interval: interval, retry: retry, clock: clock,
                               announce: { event, fields in announce(event, [("destination", .string(name))] + fields) },
                               observer: observer)
        var initial = State(cursor: LogCursor(node: node, target: destination.url),
                            status: Status(name: destination.name, url: destination.url))
        do {
            initial.cursor = try LogCursor.load(file, node: node, target: destination.url, logEnd: store.durablePrefix.end)
        } catch {
            initial.stopped = error.description
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

    public func pause() { state.withLock { $0.status.paused = true } }

    /// Wakes the thread only when it was paused: a wake left over would cut a later wait short,
    /// a destination's `Retry-After` included.
    public func resume() {
        let wasPaused = state.withLock { s -> Bool in
            defer { s.status.paused = false }
            return s.status.paused
        }
        if wasPaused { follower.wake() }
    }

    public var status: Status {
        let s = state.withLock { $0 }
        let health = follower.health
        var status = s.status
        status.lastError = health.lastError
        status.lastErrorAt = health.lastErrorAt
        status.failuresInARow = health.failuresInARow
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

    private func turn(_ follower: LogFollower) -> LogTurn {
        var (position, paused) = state.withLock { ($0.cursor.position(of: Self.stream), $0.status.paused) }
        guard !paused else { return .idle }
        // Retention removed segments this destination had not taken all of: said, counted, and
        // the cursor moved to what is kept. A retry lasts as long as the log keeps its copy.
        if let firstKept = store.segments.first?.base, position.offset < firstKept {
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
        guard position.offset < end else {
            state.withLock { $0.lag.readToEnd(at: readAt) }
            return .idle
        }
        var reached = position.offset
        var delivered = 0, refused = 0, scanned = 0
        var checkedAddress = false
        var outcome: LogTurn = .sent
        var retryAfter: Double?
        store.scanEveryRecord(from: position.offset, through: end) { record in
            guard !follower.isStopping else { outcome = .idle; return false }
            // Retention removed a segment between the check above and this read: the walk starts
            // at the first one kept, past copies never delivered. Said and counted the same way.
            if scanned == 0, record.start > position.offset {
                noteExpired(from: position.offset, to: record.start)
            }
            scanned += 1
            guard let copy = select(record) else {
                reached = record.end
                return scanned < Self.scanLimit
            }
            state.withLock { $0.lag.pending(since: copy.receivedAt) }
            if !checkedAddress {
                checkedAddress = true
                if let reason = addressRefusal() {
                    follower.noteFailure(reason)
                    outcome = .failed
                    return false
                }
            }
            let request = RelayRequest(url: destination.url,
                                       headers: RelayHeaders.all(for: copy, node: node, destination: destination.name,
                                                                 secret: destination.secret, now: clock()),
                                       body: copy.body)
            switch transport.post(request) {
            case .answered(let status, let retryAfterHeader, let bodyStart):
                switch RelayOutcome.of(status: status, retryAfter: retryAfterHeader, now: clock()) {
                case .delivered:
                    delivered += 1
                    reached = record.end
                case .refused(let status):
                    refused += 1
                    reached = record.end
                    noteRefusal(copy, status: status, bodyStart: bodyStart)
                case .retry(let after):
                    follower.noteFailure("HTTP \(status)")
                    state.withLock { $0.status.lastStatus = status }
                    retryAfter = after
                    outcome = .failed
                    return false
                }
            case .failed(let reason):
                follower.noteFailure(reason)
                outcome = .failed
                return false
            }
            return scanned < Self.scanLimit
        }
        let full = scanned >= Self.scanLimit && outcome == .sent
        if reached > position.offset {
            var next = position
            next.advance(to: reached, records: delivered, unreadable: 0)
            let saved = state.withLock { s -> LogCursor in
                s.cursor.streams[Self.stream] = next
                s.status.delivered += delivered
                s.status.refused += refused
                return s.cursor
            }
            do {
                try file.save(saved)
            } catch {
                // The copies went; the cursor did not: they go again after a restart, as after a crash.
                announce("relay_cursor_not_saved", [("destination", .string(destination.name)), ("reason", .string("\(error)"))])
            }
        }
        state.withLock { s in
            s.status.retrying = outcome == .failed
            if outcome != .failed {
                s.lag.caughtUp()
                if !full { s.lag.readToEnd(at: readAt) }
            }
        }
        if outcome != .failed, delivered + refused > 0 { follower.noteAccepted() }
        if let retryAfter { return .retryAfter(retryAfter) }
        return full ? .sentFull : outcome
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
