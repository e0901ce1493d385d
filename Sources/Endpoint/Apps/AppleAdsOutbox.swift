import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import ReportStore

/// Every Apple Ads token the endpoint has taken, and the calls to Apple's API each still needs.
///
/// A token is on disk before the app hears 202, and so is every call's outcome before the
/// outbox acts on it: a restart rebuilds this from the log and resumes each token that has no
/// final answer, with its count of 404s, and never calls again for one that has. A thread
/// (`apple-ads-calls`) starts the calls that are due, at most `maxInFlight` at once; their
/// records are committed by the event loop's turn, as everything else in the log is.
final class AppleAdsOutbox: Sendable {
    typealias Status = AppleAdsCallPolicy.Status

    struct Entry: Sendable {
        let tokenID: UInt64
        let publicID: String
        let site: String
        let receivedAt: Timestamp
        /// Kept only while an answer may still be needed.
        var token: String?
        var status: Status = .pending
        var history = AppleAdsCallPolicy.History()
        var calls = 0
        var lastHTTPStatus: Int?
        var nextAttempt: Timestamp?
        var answeredAt: Timestamp?
        var record: AppleAdsRecord?
        /// A call, or the record of its outcome, is under way.
        var busy = false
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        /// The tokens still waiting for a final answer: all the calling thread looks through.
        var pending: Set<UInt64> = []
        var byPublicID: [String: UInt64] = [:]
        /// The same token posted again gets the same id, and is never sent to Apple twice. Keyed
        /// by a 64-bit hash, so that an answered token's text is not kept: two different tokens
        /// with one hash (about one chance in 30 million among a million tokens) would be taken as one.
        var byToken: [Int: UInt64] = [:]
        /// Ids for tokens queued and not yet on disk (the log assigns the real ones).
        var queuedIDs: UInt64 = 1 << 63
        var busy = 0
        var stopping = false
    }

    let store: ReportStore
    let client: AppleAdsClient
    let clock: EndpointClock
    /// Calls to Apple under way at once: a few, since each takes about a second.
    static let maxInFlight = 8
    let maxInFlight = AppleAdsOutbox.maxInFlight
    private let state = Locked(State())
    private let changed = DispatchSemaphore(value: 0)
    private let settled = Locked<[DispatchSemaphore]>([])
    private let thread = DispatchGroup()
    /// Makes the event loop turn, so that it commits what the outbox queued.
    private let wakeLoop: Locked<(@Sendable () -> Void)?> = Locked(nil)

    init(store: ReportStore, client: AppleAdsClient, clock: EndpointClock) {
        self.store = store
        self.client = client
        self.clock = clock
        replay()
        clock.whenSet { [changed] in changed.signal() }
    }

    /// Rebuilds every token's state from the log: its record, then each call's.
    private func replay() {
        let end = store.bytesOnDisk
        var entries: [UInt64: Entry] = [:]
        var tokenHashes: [UInt64: Int] = [:]
        store.scanRecords(of: .appleAdsToken, through: end) { view in
            if let token = StoredAppleAdsToken.decode(view) {
                tokenHashes[token.id] = token.token.hashValue
                entries[token.id] = Entry(tokenID: token.id, publicID: Self.text(of: token.publicID), site: token.site,
                                          receivedAt: token.receivedAt, token: token.token, nextAttempt: token.receivedAt)
            }
            return true
        }
        store.scanRecords(of: .appleAdsCall, through: end) { view in
            if let call = StoredAppleAdsCall.decode(view), var entry = entries[call.tokenID] {
                Self.apply(call, to: &entry)
                entries[call.tokenID] = entry
            }
            return true
        }
        state.withLock { s in
            for (id, entry) in entries {
                s.entries[id] = entry
                s.byPublicID[entry.publicID] = id
                s.byToken[tokenHashes[id]!] = id
                if entry.status == .pending { s.pending.insert(id) }
            }
        }
    }

    /// What a call's record says about its token, live or replayed.
    private static func apply(_ call: StoredAppleAdsCall, to entry: inout Entry) {
        if call.called {
            entry.calls += 1
            entry.lastHTTPStatus = call.httpStatus
            if call.httpStatus == 404 { entry.history.notFound += 1 } else if call.status == .pending { entry.history.unavailable += 1 }
        }
        entry.status = call.status
        entry.nextAttempt = call.nextAttempt
        if call.status.isFinal {
            entry.token = nil
            entry.answeredAt = call.at
            entry.record = call.record
        }
    }

    static func text(of publicID: [UInt8]) -> String {
        publicID.map { String(format: "%02x", $0) }.joined()
    }

    // MARK: - Taking tokens

    enum Taken {
        /// Already known: the same token posted again.
        case known(Entry)
        /// The same token, posted again before the first copy reached the disk.
        case beingStored
        /// Queued; the completion says whether it reached the disk (a store that is closing
        /// calls it at once, with the failure).
        case queued
    }

    /// Takes a token; `completion` runs once it is on disk (with its entry) or could not be.
    func take(token: String, site: String, completion: @escaping @Sendable (Result<Entry, StoreError>) -> Void) -> Taken {
        var publicID = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in publicID.indices { publicID[i] = generator.next() }
        let text = Self.text(of: publicID)
        let hash = token.hashValue
        let placeholder: UInt64? = state.withLock { s in
            if s.byToken[hash] != nil { return nil }
            let id = s.queuedIDs
            s.queuedIDs += 1
            // Held under a placeholder id until its record is on disk, so that the same token
            // twice in one turn is one token.
            s.byToken[hash] = id
            return id
        }
        guard let placeholder else {
            let existing = state.withLock { s in s.byToken[hash].flatMap { s.entries[$0] } }
            return existing.map(Taken.known) ?? .beingStored
        }
        store.appendAppleAdsToken(publicID: publicID, site: site, token: token) { [self] result in
            switch result {
            case .success(let stored):
                let entry = Entry(tokenID: stored.id, publicID: text, site: site, receivedAt: stored.receivedAt, token: token,
                                  nextAttempt: stored.receivedAt)
                state.withLock { s in
                    s.entries[stored.id] = entry
                    s.pending.insert(stored.id)
                    s.byPublicID[text] = stored.id
                    s.byToken[hash] = stored.id
                }
                changed.signal()
                completion(.success(entry))
            case .failure(let error):
                state.withLock { s in if s.byToken[hash] == placeholder { s.byToken[hash] = nil } }
                completion(.failure(error))
            }
        }
        return .queued
    }

    func entry(publicID: String) -> Entry? {
        state.withLock { s in s.byPublicID[publicID].flatMap { s.entries[$0] } }
    }

    /// Every token, oldest first.
    var all: [Entry] {
        state.withLock { Array($0.entries.values) }.sorted { $0.tokenID < $1.tokenID }
    }

    // MARK: - Calling Apple

    func start(wakeLoop: @escaping @Sendable () -> Void) {
        self.wakeLoop.withLock { $0 = wakeLoop }
        thread.startThread(named: "apple-ads-calls") { [self] in run() }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        changed.signal()
        thread.wait()
        client.stop()
    }

    /// Looks for due calls now: after the clock moved (a manual clock, a test).
    func poke() {
        changed.signal()
    }

    /// Blocks until no call is under way and none is due at the clock's time, or `timeout`
    /// seconds passed; returns whether it settled. For tests and the demo.
    @discardableResult
    func waitUntilSettled(timeout: Double) -> Bool {
        let signal = DispatchSemaphore(value: 0)
        settled.withLock { $0.append(signal) }
        poke()
        return signal.wait(timeout: .now() + timeout) == .success
    }

    private func run() {
        while true {
            let now = clock.now()
            let (due, wait, stopping) = state.withLock { s -> ([Entry], Int64?, Bool) in
                if s.stopping { return ([], nil, true) }
                var due: [Entry] = []
                var next: Int64?
                for id in s.pending {
                    guard let entry = s.entries[id], !entry.busy else { continue }
                    let at = entry.nextAttempt?.millisecondsSinceEpoch ?? 0
                    if at <= now.millisecondsSinceEpoch, s.busy < maxInFlight {
                        s.entries[id]!.busy = true
                        s.busy += 1
                        due.append(entry)
                    } else {
                        next = min(next ?? at, at)
                    }
                }
                return (due, next, false)
            }
            if stopping { return }
            for entry in due { call(entry, at: now) }
            if due.isEmpty {
                notifySettledIfIdle(now: now)
                // A system clock: sleep until the next call is due (at most a second, so that a
                // clock set by hand is noticed too); woken early by a new token or a poke.
                let milliseconds = wait.map { max(1, min(1000, $0 - now.millisecondsSinceEpoch)) } ?? 1000
                _ = changed.wait(timeout: .now() + .milliseconds(Int(milliseconds)))
            }
        }
    }

    private func notifySettledIfIdle(now: Timestamp) {
        let idle = state.withLock { s in
            s.busy == 0 && !s.pending.contains { (s.entries[$0]?.nextAttempt?.millisecondsSinceEpoch ?? 0) <= now.millisecondsSinceEpoch }
        }
        guard idle else { return }
        for signal in settled.withLock({ list -> [DispatchSemaphore] in defer { list = [] }; return list }) { signal.signal() }
    }

    private func call(_ entry: Entry, at now: Timestamp) {
        guard let token = entry.token,
              now.millisecondsSinceEpoch < entry.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds else {
            // 24 h without a final answer: Apple would refuse the token now.
            return record(StoredAppleAdsCall(tokenID: entry.tokenID, at: now, called: false, httpStatus: nil, status: .expired,
                                             nextAttempt: nil, record: nil))
        }
        client.call(token: token) { [self] status, body in
            // Cancelled by a stop: not a failure of Apple's; the next start calls again at once.
            guard !state.withLock({ $0.stopping }) else { return }
            let answeredAt = clock.now()
            let record = status == 200 ? AppleAdsRecord.read(body) : nil
            // A copy: the outbox's own counts change only once the call's record is on disk.
            var history = entry.history
            let decision = AppleAdsCallPolicy.decide(status: status, record: record, history: &history, receivedAt: entry.receivedAt,
                                                     now: answeredAt)
            let call: StoredAppleAdsCall = switch decision {
            case .final(let final):
                StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: final, nextAttempt: nil,
                                   record: final == .attributed || final == .notAttributed ? record : nil)
            case .retry(let at):
                StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: .pending, nextAttempt: at, record: nil)
            }
            self.record(call)
        }
    }

    /// Writes a call's outcome, and acts on it once it is on disk.
    private func record(_ call: StoredAppleAdsCall) {
        store.appendAppleAdsCall(call) { [self] result in
            state.withLock { s in
                guard var entry = s.entries[call.tokenID] else { return }
                entry.busy = false
                s.busy -= 1
                switch result {
                case .success(let at):
                    var stored = call
                    stored.at = at
                    Self.apply(stored, to: &entry)
                    if entry.status.isFinal { s.pending.remove(call.tokenID) }
                case .failure:
                    // Not on disk: the call counts for nothing, and is made again later.
                    entry.nextAttempt = Timestamp(millisecondsSinceEpoch: clock.now().millisecondsSinceEpoch + AppleAdsCallPolicy.firstBackoff)
                }
                s.entries[call.tokenID] = entry
            }
            changed.signal()
        }
        wakeLoop.withLock { $0 }?()
    }
}
