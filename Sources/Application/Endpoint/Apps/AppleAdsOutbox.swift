import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

/// The Apple Ads tokens still waiting for Apple's final answer, and the calls to Apple's API each
/// still needs; where the final answers of the last day are in the log (the app reads its answer
/// by the token's public id, and may post the token again: both are read back from the record),
/// about 100 bytes a token; and, for all the others, their counts per day and site
/// (`AppleAdsTally`). A token's state is final within 24 hours, so what is kept follows the tokens
/// of about a day, not every token ever taken: the final call's record carries its token's summary
/// (`StoredAppleAdsCall.TokenSummary`), from which `/api/apple-ads` streams the rest.
///
/// A token is on disk before the app hears 202, and so is every call's outcome before the
/// outbox acts on it: a restart rebuilds this from the log and resumes each token that has no
/// final answer, with its count of 404s, and never calls again for one that has. A thread
/// (`apple-ads-calls`) starts the calls that are due (`AppleAdsSchedule`: by due time, paused
/// while the API does not answer), at most `maxInFlight` at once; their records are committed by
/// the event loop's turn, as everything else in the log is.
///
/// What it holds waiting is bounded: past `maxPending` tokens without a final answer, a new one
/// is refused (503 `apple_ads_backlogged`) and the app posts it again later; a token is good
/// for 24 hours.
final class AppleAdsOutbox: Sendable {
    typealias Status = AppleAdsCallPolicy.Status

    struct Entry: Sendable {
        let tokenID: UInt64
        let publicID: String
        let site: String
        let receivedAt: Timestamp
        /// The token's 64-bit hash (`byToken`), so that it can be let go of once the entry goes.
        var tokenHash = 0
        /// Kept only while an answer may still be needed.
        var token: String?
        /// Where the token's record begins in the log: its bytes, once `token` is let go of.
        var tokenStart: Int?
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
        /// Tokens without a final answer, and those settled by records from before final calls
        /// carried their token (`legacy`).
        var entries: [UInt64: Entry] = [:]
        /// Tokens answered in the last day: where their final call's record begins in the log.
        var answered: [UInt64: Int] = [:]
        /// And where their token's record begins, where it is known (not for a token taken from a
        /// digest's copy): what a token posted again with the same hash is compared with.
        var answeredTokenStarts: [UInt64: Int] = [:]
        /// The tokens still waiting for a final answer.
        var pending: Set<UInt64> = []
        /// Tokens taken and not yet on disk: they count against `maxPending` too.
        var queued = 0
        /// The same token posted again while its first copy is queued: answered with it.
        var waiting: [Int: [Completion]] = [:]
        /// The pending tokens' next calls, by due time, and the API's pause.
        var schedule = AppleAdsSchedule()
        /// Token ids in arrival order, so that the oldest pending one (the next to expire) is
        /// found without a scan; final ones are skipped as they come to the front.
        var arrivals: [UInt64] = []
        var arrivalsHead = 0
        var counts = Counts()
        var byPublicID: [AppleAdsPublicID: UInt64] = [:]
        /// The same token posted again gets the same id, and is never sent to Apple twice. Keyed
        /// by a 64-bit hash, so that an answered token's text is not kept; a match is a candidate
        /// whose bytes are compared (the text in memory, or the token's record in the log), so
        /// two tokens with one hash are never taken as one.
        var byToken: [Int: UInt64] = [:]
        /// The text of tokens taken and not yet on disk, by their placeholder id: what a second
        /// copy arriving meanwhile is compared with.
        var queuedTokens: [UInt64: String] = [:]
        /// Ids for tokens queued and not yet on disk (the log assigns the real ones).
        var queuedIDs: UInt64 = 1 << 63
        var busy = 0
        var stopping = false
        /// False until a replay left to `start` is done (`replayInBackground`).
        var ready = true
        /// Every final token, counted per day and site.
        var tally = AppleAdsTally()
        /// Tokens answered in the last day, in the order they were answered, with when, and
        /// what indexes them.
        var settled: [(id: UInt64, at: Int64, publicID: AppleAdsPublicID, tokenHash: Int)] = []
        var settledHead = 0
        /// Tokens settled by records written before final calls carried their token (format 1):
        /// `/api/apple-ads` has no other way to join them, so they stay, as every token once did.
        var legacy: [Entry] = []

        /// Lets go of the tokens answered before `cutoff`: their answer is in the tally and the log.
        mutating func forgetSettled(before cutoff: Int64) {
            while settledHead < settled.count, settled[settledHead].at < cutoff {
                let (id, _, publicID, tokenHash) = settled[settledHead]
                settledHead += 1
                answeredTokenStarts[id] = nil
                if answered.removeValue(forKey: id) == nil {
                    guard let entry = entries[id], entry.status.isFinal else { continue }
                    entries[id] = nil
                }
                if byPublicID[publicID] == id { byPublicID[publicID] = nil }
                if byToken[tokenHash] == id { byToken[tokenHash] = nil }
            }
            if settledHead > 4096 && settledHead * 2 > settled.count {
                settled.removeFirst(settledHead)
                settledHead = 0
            }
            // A dictionary keeps its storage when emptied: after a burst of tokens, 100,000
            // waiting ones (about 300 bytes each) would hold 45 MB for good.
            Self.shrink(&entries)
            Self.shrink(&answered)
            Self.shrink(&answeredTokenStarts)
            Self.shrink(&byPublicID)
            Self.shrink(&byToken)
            if pending.capacity > 4 * max(pending.count, 1024) {
                var smaller = Set<UInt64>(minimumCapacity: pending.count)
                for id in pending { smaller.insert(id) }
                pending = smaller
            }
        }

        private static func shrink<Key, Value>(_ dictionary: inout [Key: Value]) {
            guard dictionary.capacity > 4 * max(dictionary.count, 1024) else { return }
            var smaller = [Key: Value](minimumCapacity: dictionary.count)
            for (key, value) in dictionary { smaller[key] = value }
            dictionary = smaller
        }

        /// A token has just become final, its call's record on disk at `start`: only where that
        /// record is stays in memory, for a day.
        mutating func settle(_ entry: Entry, recordStart start: Int) {
            pending.remove(entry.tokenID)
            tally.add(entry)
            entries[entry.tokenID] = nil
            answered[entry.tokenID] = start
            if let tokenStart = entry.tokenStart { answeredTokenStarts[entry.tokenID] = tokenStart }
            index(entry)
            settled.append((entry.tokenID, entry.answeredAt?.millisecondsSinceEpoch ?? 0, AppleAdsPublicID(text: entry.publicID) ?? AppleAdsPublicID(bytes: []),
                            entry.tokenHash))
        }

        /// `byToken: false` for a token whose hash another token's entry holds.
        mutating func index(_ entry: Entry, byToken indexed: Bool = true) {
            if let publicID = AppleAdsPublicID(text: entry.publicID) { byPublicID[publicID] = entry.tokenID }
            if indexed { byToken[entry.tokenHash] = entry.tokenID }
        }

        /// The oldest token still pending, dropping final ones from the front.
        mutating func oldestPending() -> Entry? {
            while arrivalsHead < arrivals.count {
                let id = arrivals[arrivalsHead]
                if pending.contains(id), let entry = entries[id] { return entry }
                arrivalsHead += 1
            }
            return nil
        }

        mutating func noteArrival(_ id: UInt64) {
            if arrivalsHead > 4096 && arrivalsHead * 2 > arrivals.count {
                arrivals.removeFirst(arrivalsHead)
                arrivalsHead = 0
            }
            arrivals.append(id)
        }
    }

    /// What `/metrics` says of the outbox since start.
    struct Counts {
        /// Calls by what came of them: a final status's name, `retry_not_found` (404 while Apple
        /// may still find the token), `unavailable` (no answer, 429, 5xx), `expired` (24 h
        /// passed; no call made).
        var calls: [String: Int] = [:]
        /// Tokens refused because `maxPending` were waiting.
        var backlogged = 0
    }

    let store: RecordLog
    let client: AppleAdsClient
    let clock: EndpointClock
    /// Calls to Apple under way at once: a few, since each takes about a second.
    static let maxInFlight = 8
    let maxInFlight = AppleAdsOutbox.maxInFlight
    /// Tokens without a final answer, at most; past it new tokens are refused.
    let maxPending: Int
    private let state = Locked(State())
    private let changed = DispatchSemaphore(value: 0)
    private let settled = Locked<[DispatchSemaphore]>([])
    private let thread = DispatchGroup()
    /// Asks the event loop for a turn, so that it commits what the outbox queued.
    private let turns: TurnRequester

    /// Where sealed segments' digests are (`SegmentDigests`): a start takes the tokens settled
    /// in old segments from them, as counts.
    let digestsDirectory: String?
    /// Sealed segments the start took from their digests.
    private(set) nonisolated(unsafe) var segmentsFromDigests = 0

    /// `replayInBackground`: the log is read by `start`'s thread, before its first call, while the
    /// endpoint serves (`isReady` false meanwhile); for a start whose digests do not cover the old
    /// segments, which would read the log from the first one they miss. `beforeReplay` runs there
    /// first (tests hold it).
    /// `tokenHash`: the index's key for a token's text (tests give one that collides).
    private let tokenHash: @Sendable (String) -> Int

    init(store: RecordLog, client: AppleAdsClient, clock: EndpointClock, maxPending: Int, turns: TurnRequester,
         digestsDirectory: String? = nil, replayInBackground: Bool = false, beforeReplay: @escaping @Sendable () -> Void = {},
         tokenHash: @escaping @Sendable (String) -> Int = { $0.hashValue }) {
        self.tokenHash = tokenHash
        self.store = store
        self.digestsDirectory = digestsDirectory
        self.client = client
        self.clock = clock
        self.maxPending = maxPending
        self.turns = turns
        self.beforeReplay = beforeReplay
        if replayInBackground {
            state.withLock { $0.ready = false }
        } else {
            replay()
        }
        clock.whenSet { [changed] in changed.signal() }
    }

    private let beforeReplay: @Sendable () -> Void
    /// Entered by `start` while the replay left to it is under way.
    private let replaying = DispatchGroup()

    /// Whether the outbox knows every token the log holds: until then a token cannot be told from
    /// one already sent to Apple, and the paths that need it answer `rebuilding`.
    var isReady: Bool { state.withLock { $0.ready } }

    /// After `start`: waits until the replay left to it is done (tests).
    func waitUntilReady() {
        replaying.wait()
    }

    static let rebuilding = Problem(status: 503, rule: "apple_ads_rebuilding",
                                    detail: "the Apple Ads tokens are being read again from the log after a start found a digest it could not trust; post the token again shortly (reports are being accepted meanwhile)")

    /// Throws `rebuilding` until the outbox is ready.
    func requireReady() throws {
        guard isReady else { throw Self.rebuilding }
    }

    /// How long a final token stays in memory after its answer.
    static let settledKept: Int64 = 24 * 3_600_000

    /// Rebuilds the outbox from the log, tokens and calls in the order they were written: each
    /// token is held only until its final call, then counted in the tally (and kept a day if it
    /// was answered in the last one). Sealed segments older than that day are taken from their
    /// digests (`AppleAdsOutbox+Digest`) while they have one, so that a start reads about a day of
    /// the log whatever its history.
    private func replay() {
        let end = store.bytesOnDisk
        let cutoff = clock.now().millisecondsSinceEpoch - Self.settledKept
        // Built in place and moved in whole: a day of tokens is held once, never copied.
        var replayed = State()
        func take(_ view: RecordLog.RecordView, fromLog: Bool) {
            if let token = StoredAppleAdsToken.decode(view) {
                replayed.entries[token.id] = Entry(tokenID: token.id, publicID: Self.text(of: token.publicID), site: token.site,
                                          receivedAt: token.receivedAt, tokenHash: tokenHash(token.token), token: token.token,
                                          tokenStart: fromLog ? token.recordStart : nil, nextAttempt: token.receivedAt)
            } else if let call = StoredAppleAdsCall.decode(view) {
                // A second final call for a token still held (never written, but a log is not to be
                // trusted) changes nothing: the token is counted once.
                guard var entry = replayed.entries[call.tokenID], !entry.status.isFinal else {
                    if replayed.entries[call.tokenID] != nil { return }
                    // Its token's record went with a segment retention removed, or is in a
                    // digested segment that settled it: the call says all.
                    if let summary = call.token, call.status.isFinal { replayed.tally.add(Entry.settled(call, summary)) }
                    return
                }
                Self.apply(call, to: &entry)
                guard entry.status.isFinal else {
                    replayed.entries[call.tokenID] = entry
                    return
                }
                guard call.at.millisecondsSinceEpoch >= cutoff else {
                    replayed.tally.add(entry)
                    if call.token == nil { replayed.legacy.append(entry) }
                    replayed.entries[call.tokenID] = nil
                    return
                }
                if call.token != nil {
                    replayed.settle(entry, recordStart: view.start)
                } else {
                    replayed.tally.add(entry)
                    replayed.legacy.append(entry)
                    replayed.entries[call.tokenID] = entry
                    replayed.settled.append((entry.tokenID, call.at.millisecondsSinceEpoch,
                                             AppleAdsPublicID(text: entry.publicID) ?? AppleAdsPublicID(bytes: []), entry.tokenHash))
                }
            }
        }
        var from = 0, digested = 0, records = 0
        for segment in store.segments where segment.sealed {
            guard let last = segment.lastTime, last.millisecondsSinceEpoch < cutoff, let digest = digest(of: segment),
                  let section = digest.sections[digestName], let read = Self.read(section) else { break }
            replayed.tally.merge(read.tally)
            _ = RecordCopy.read(section, from: read.recordsAt, count: read.records) { take($0, fromLog: false) }
            from = segment.end
            digested += 1
        }
        segmentsFromDigests = digested
        let kinds = (RecordKind.appleAdsToken.number, RecordKind.appleAdsCall.number)
        store.scanEveryRecord(from: from, through: end) { view in
            records &+= 1
            // A stop during a replay in the background ends it: nothing is called, nothing lost.
            if records & 0xFFFF == 0, state.withLock({ $0.stopping }) { return false }
            if view.kind == kinds.0 || view.kind == kinds.1 { take(view, fromLog: true) }
            return true
        }
        var pending: [(id: UInt64, due: Int64)] = []
        for (id, entry) in replayed.entries {
            replayed.index(entry)
            if entry.status == .pending { pending.append((id, entry.nextAttempt?.millisecondsSinceEpoch ?? 0)) }
        }
        for (id, due) in pending.sorted(by: { $0.id < $1.id }) {
            replayed.pending.insert(id)
            replayed.noteArrival(id)
            replayed.schedule.schedule(id, at: due)
        }
        state.withLock { s in
            replayed.stopping = s.stopping
            // Ready when replayed in `init`; in `start`, once it is known not to have been stopped.
            replayed.ready = s.ready
            swap(&s, &replayed)
        }
    }

    /// The segment's digest, if it is whole and of this very segment.
    private func digest(of segment: RecordLog.Segment) -> SegmentDigest? {
        guard let digestsDirectory, let data = FileManager.default.contents(atPath: digestsDirectory + "/\(segment.base).digest"),
              let digest = SegmentDigest.decode([UInt8](data)), digest.describes(segment) else { return nil }
        return digest
    }

    /// What a call's record says about its token, live or replayed.
    static func apply(_ call: StoredAppleAdsCall, to entry: inout Entry) {
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
        Hex.text(publicID)
    }

    /// The bytes of a public id's text (zeros for anything that is not 32 hex digits).
    static func bytes(ofText text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        guard digits.count == 32 else { return [UInt8](repeating: 0, count: 16) }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        return (0..<16).map { i in (value(digits[2 * i]).map { $0 << 4 } ?? 0) | (value(digits[2 * i + 1]) ?? 0) }
    }

    /// What a final call's record says of its token, for that record.
    private static func summary(of entry: Entry, called: Bool, httpStatus: Int?) -> StoredAppleAdsCall.TokenSummary {
        StoredAppleAdsCall.TokenSummary(publicID: bytes(ofText: entry.publicID), site: entry.site, receivedAt: entry.receivedAt,
                                        calls: entry.calls + (called ? 1 : 0), lastHTTPStatus: called ? httpStatus : entry.lastHTTPStatus)
    }

    // MARK: - Taking tokens

    enum Taken {
        /// Already known: the same token posted again.
        case known(Entry)
        /// `maxPending` tokens are waiting for Apple: not taken.
        case backlogged
        /// Answered in the last day, and its answer's record cannot be read back: not taken
        /// again (Apple is never asked twice for one token), and not answered now.
        case unreadable
        /// Queued, or the same token posted again while its first copy is queued; the
        /// completion says whether it reached the disk (a store that is closing calls it at
        /// once, with the failure).
        case queued
    }

    typealias Completion = @Sendable (Result<Entry, StoreError>) -> Void

    /// Takes a token; `completion` runs once it is on disk (with its entry) or could not be.
    func take(token: String, site: String, completion: @escaping Completion) -> Taken {
        var publicID = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in publicID.indices { publicID[i] = generator.next() }
        let text = Self.text(of: publicID)
        let hash = tokenHash(token)
        enum Claim { case known(Entry), answered(UInt64, Int, Int?), waiting, backlogged, placeholder(UInt64, indexed: Bool) }
        func claim(skippingAnswered: Bool) -> Claim {
            state.withLock { s -> Claim in
                // Another token with the same hash is a different token: taken as new, and left
                // out of the index (whose place the first one keeps).
                var collides = false
                if let id = s.byToken[hash] {
                    if let entry = s.entries[id], let text = entry.token {
                        if Self.sameBytes(text, token) { return .known(entry) }
                        collides = true
                    } else if let entry = s.entries[id] {
                        // Settled by a record of the old format, which kept no text: known by its hash, as before.
                        return .known(entry)
                    } else if let start = s.answered[id] {
                        if !skippingAnswered { return .answered(id, start, s.answeredTokenStarts[id]) }
                        collides = true
                    } else if let text = s.queuedTokens[id] {
                        guard Self.sameBytes(text, token) else { return placeholder(&s, indexed: false) ?? .backlogged }
                        // Its first copy is not on disk yet: this one is answered with it.
                        s.waiting[hash, default: []].append(completion)
                        return .waiting
                    }
                }
                return placeholder(&s, indexed: !collides) ?? .backlogged
            }
        }
        func placeholder(_ s: inout State, indexed: Bool) -> Claim? {
            guard s.pending.count + s.queued < maxPending else {
                s.counts.backlogged += 1
                return nil
            }
            s.queued += 1
            let id = s.queuedIDs
            s.queuedIDs += 1
            s.queuedTokens[id] = token
            // Held under a placeholder id until its record is on disk, so that the same token
            // twice in one turn is one token.
            if indexed { s.byToken[hash] = id }
            return .placeholder(id, indexed: indexed)
        }
        var taken = claim(skippingAnswered: false)
        if case .answered(let id, let start, let tokenStart) = taken {
            // The answered token's text is only in the log: compared with its record, one read.
            guard let entry = answeredEntry(id, at: start) else { return .unreadable }
            // Unknown only for a token taken from a digest's copy: known by its hash there, as before.
            let same: Bool? = tokenStart.map { storedToken(id, at: $0, is: token) } ?? true
            switch same {
            case true?: return .known(entry)
            case nil: return .unreadable
            case false?: taken = claim(skippingAnswered: true)
            }
        }
        let placeholder: UInt64
        let indexed: Bool
        switch taken {
        case .known(let entry): return .known(entry)
        case .answered: return .unreadable  // not claimed twice
        case .waiting: return .queued
        case .backlogged: return .backlogged
        case .placeholder(let id, let isIndexed): (placeholder, indexed) = (id, isIndexed)
        }
        store.appendAppleAdsToken(publicID: publicID, site: site, token: token) { [self] result in
            switch result {
            case .success(let stored):
                let entry = Entry(tokenID: stored.id, publicID: text, site: site, receivedAt: stored.receivedAt, tokenHash: hash,
                                  token: token, tokenStart: stored.recordStart, nextAttempt: stored.receivedAt)
                let waiting = state.withLock { s -> [Completion] in
                    s.queued -= 1
                    s.queuedTokens[placeholder] = nil
                    s.entries[stored.id] = entry
                    s.pending.insert(stored.id)
                    s.noteArrival(stored.id)
                    s.schedule.schedule(stored.id, at: stored.receivedAt.millisecondsSinceEpoch)
                    s.index(entry, byToken: indexed)
                    return indexed ? s.waiting.removeValue(forKey: hash) ?? [] : []
                }
                changed.signal()
                completion(.success(entry))
                for other in waiting { other(.success(entry)) }
            case .failure(let error):
                let waiting = state.withLock { s -> [Completion] in
                    s.queued -= 1
                    s.queuedTokens[placeholder] = nil
                    guard indexed else { return [] }
                    if s.byToken[hash] == placeholder { s.byToken[hash] = nil }
                    return s.waiting.removeValue(forKey: hash) ?? []
                }
                completion(.failure(error))
                for other in waiting { other(.failure(error)) }
            }
        }
        return .queued
    }

    /// The token with this public id, waiting or answered in the last day.
    func entry(publicID: String) throws(AnswerUnreadable) -> Entry? {
        guard let key = AppleAdsPublicID(text: publicID) else { return nil }
        enum Found { case entry(Entry), answered(UInt64, Int), none }
        let found = state.withLock { s -> Found in
            guard let id = s.byPublicID[key] else { return .none }
            if let entry = s.entries[id] { return .entry(entry) }
            return s.answered[id].map { .answered(id, $0) } ?? .none
        }
        switch found {
        case .entry(let entry): return entry
        case .answered(let id, let start):
            guard let entry = answeredEntry(id, at: start) else { throw AnswerUnreadable() }
            return entry
        case .none: return nil
        }
    }

    /// A final answer's record could not be read back (a damaged segment).
    struct AnswerUnreadable: Error {}

    /// Token `id`, answered in the last day, as its final call's record tells it: a record that is
    /// not that token's final call is no answer.
    /// Whether the token record `id`, which begins at `start`, holds exactly `token`; nil when
    /// it cannot be read. One record read, as the answer's own.
    private func storedToken(_ id: UInt64, at start: Int, is token: String) -> Bool? {
        store.record(startingAt: start) { view -> Bool? in
            guard let stored = StoredAppleAdsToken.decode(view), stored.id == id else { return nil }
            return Self.sameBytes(stored.token, token)
        }
    }

    /// Byte for byte: String's `==` takes canonically equivalent texts as equal, and two tokens
    /// that differ in their bytes are two tokens.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    private func answeredEntry(_ id: UInt64, at start: Int) -> Entry? {
        store.record(startingAt: start) { view -> Entry? in
            guard let call = StoredAppleAdsCall.decode(view), call.tokenID == id, call.status.isFinal, let token = call.token else { return nil }
            return Entry.settled(call, token)
        }
    }

    /// The Apple Ads view's numbers: the final tokens' tally and the waiting ones.
    func summary(_ query: AppsSummary.Query) -> AppleAdsSummary {
        let (tally, pending) = state.withLock { s in (s.tally, s.pending.compactMap { s.entries[$0] }) }
        return AppleAdsSummary(tally: tally, pending: pending, query: query)
    }

    /// For `/api/apple-ads`: the tokens settled by old records, and those still waiting, received
    /// in `[since, until)`. The others are read from their final calls' records.
    func exportSnapshot(since: Timestamp?, until: Timestamp?) -> (legacy: [Entry], pending: [Entry]) {
        func inRange(_ entry: Entry) -> Bool {
            since.map { entry.receivedAt >= $0 } ?? true && until.map { entry.receivedAt < $0 } ?? true
        }
        return state.withLock { s in
            (s.legacy.filter(inRange), s.pending.compactMap { s.entries[$0] }.filter(inRange))
        }
    }

    /// Tokens held in memory: waiting, answered in the last day (where their answer is), or
    /// settled by old records.
    var entriesInMemory: Int {
        state.withLock { s in s.entries.count + s.answered.count + s.legacy.filter { s.entries[$0.tokenID] == nil }.count }
    }

    // MARK: - Calling Apple

    func start() {
        let replayFirst = !isReady
        if replayFirst { replaying.enter() }
        thread.startThread(named: "apple-ads-calls") { [self] in
            if replayFirst {
                beforeReplay()
                let started = Date()
                replay()
                let done = state.withLock { s -> Bool in
                    if !s.stopping { s.ready = true }
                    return s.ready
                }
                replaying.leave()
                if done {
                    EventLog.write("apple_ads_replayed", ["seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started))),
                                                          "segments_from_digests": .number(String(segmentsFromDigests))])
                }
            }
            run()
        }
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
            let (expired, due, wake, stopping) = state.withLock { s -> ([Entry], [Entry], Int64?, Bool) in
                if s.stopping { return ([], [], nil, true) }
                s.forgetSettled(before: now.millisecondsSinceEpoch - Self.settledKept)
                // 24 h without a final answer: recorded as expired without a call, paused or not.
                var expired: [Entry] = []
                while let oldest = s.oldestPending(), !oldest.busy,
                      oldest.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds <= now.millisecondsSinceEpoch {
                    s.entries[oldest.tokenID]?.busy = true
                    s.busy += 1
                    s.arrivalsHead += 1
                    expired.append(oldest)
                }
                let ids = s.schedule.takeDue(now: now.millisecondsSinceEpoch, inFlight: s.busy, maxInFlight: maxInFlight) { id, at in
                    guard s.pending.contains(id), let entry = s.entries[id], !entry.busy else { return false }
                    return (entry.nextAttempt?.millisecondsSinceEpoch ?? 0) == at
                }
                var due: [Entry] = []
                for id in ids {
                    guard var entry = s.entries[id] else { continue }
                    entry.busy = true
                    s.entries[id] = entry
                    s.busy += 1
                    due.append(entry)
                }
                var wake = s.schedule.nextWake(inFlight: s.busy, maxInFlight: maxInFlight)
                // A busy oldest token's expiry is its call's business: waking for it would spin.
                if let oldest = s.oldestPending(), !oldest.busy {
                    let expiry = oldest.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds
                    wake = min(wake ?? expiry, expiry)
                }
                return (expired, due, wake, false)
            }
            if stopping { return }
            for entry in expired {
                record(StoredAppleAdsCall(tokenID: entry.tokenID, at: now, called: false, httpStatus: nil, status: .expired,
                                          nextAttempt: nil, record: nil, token: Self.summary(of: entry, called: false, httpStatus: nil)),
                       outcome: "expired")
            }
            for entry in due { call(entry, at: now) }
            if expired.isEmpty && due.isEmpty {
                notifySettledIfIdle(now: now)
                // A system clock: sleep until the next call is due (at most a second, so that a
                // clock set by hand is noticed too); woken early by a new token, an answer or a poke.
                let milliseconds = wake.map { max(1, min(1000, $0 - now.millisecondsSinceEpoch)) } ?? 1000
                _ = changed.wait(timeout: .now() + .milliseconds(Int(milliseconds)))
            }
        }
    }

    private func notifySettledIfIdle(now: Timestamp) {
        let idle = state.withLock { s in
            s.busy == 0 && (s.schedule.nextWake(inFlight: 0, maxInFlight: maxInFlight).map { $0 > now.millisecondsSinceEpoch } ?? true)
        }
        guard idle else { return }
        for signal in settled.withLock({ list -> [DispatchSemaphore] in defer { list = [] }; return list }) { signal.signal() }
    }

    private func call(_ entry: Entry, at now: Timestamp) {
        guard let token = entry.token,
              now.millisecondsSinceEpoch < entry.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds else {
            // 24 h without a final answer: Apple would refuse the token now.
            return record(StoredAppleAdsCall(tokenID: entry.tokenID, at: now, called: false, httpStatus: nil, status: .expired,
                                             nextAttempt: nil, record: nil, token: Self.summary(of: entry, called: false, httpStatus: nil)),
                          outcome: "expired")
        }
        client.call(token: token) { [self] status, body in
            // Cancelled by a stop: not a failure of Apple's; the next start calls again at once.
            guard !state.withLock({ $0.stopping }) else { return }
            let answeredAt = clock.now()
            let record = status == 200 ? AppleAdsRecord.read(body) : nil
            let unavailable = AppleAdsCallPolicy.meansUnavailable(status: status, recordReadable: record != nil)
            state.withLock { $0.schedule.apiAnswered(unavailable: unavailable, now: answeredAt.millisecondsSinceEpoch) }
            // A copy: the outbox's own counts change only once the call's record is on disk.
            var history = entry.history
            let decision = AppleAdsCallPolicy.decide(status: status, record: record, history: &history, receivedAt: entry.receivedAt,
                                                     now: answeredAt)
            let call: StoredAppleAdsCall, outcome: String
            switch decision {
            case .final(let final):
                call = StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: final, nextAttempt: nil,
                                          record: final == .attributed || final == .notAttributed ? record : nil,
                                          token: Self.summary(of: entry, called: true, httpStatus: status))
                outcome = final.name
            case .retry(let at):
                call = StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: .pending, nextAttempt: at, record: nil)
                outcome = unavailable ? "unavailable" : "retry_not_found"
            }
            self.record(call, outcome: outcome)
        }
    }

    /// Writes a call's outcome, and acts on it once it is on disk.
    private func record(_ call: StoredAppleAdsCall, outcome: String) {
        store.appendAppleAdsCall(call) { [self] result in
            state.withLock { s in
                guard var entry = s.entries[call.tokenID] else { return }
                entry.busy = false
                s.busy -= 1
                switch result {
                case .success(let written):
                    var stored = call
                    stored.at = written.at
                    Self.apply(stored, to: &entry)
                    s.counts.calls[outcome, default: 0] += 1
                    if entry.status.isFinal {
                        s.settle(entry, recordStart: written.start)
                        return
                    }
                case .failure:
                    // Not on disk: the call counts for nothing, and is made again later.
                    entry.nextAttempt = Timestamp(millisecondsSinceEpoch: clock.now().millisecondsSinceEpoch + AppleAdsCallPolicy.firstBackoff)
                }
                if !entry.status.isFinal, let next = entry.nextAttempt {
                    s.schedule.schedule(call.tokenID, at: next.millisecondsSinceEpoch)
                }
                s.entries[call.tokenID] = entry
            }
            changed.signal()
        }
        turns.request()
    }
}

extension AppleAdsOutbox.Entry {
    /// A token as its final call's record tells it.
    static func settled(_ call: StoredAppleAdsCall, _ token: StoredAppleAdsCall.TokenSummary) -> AppleAdsOutbox.Entry {
        var entry = AppleAdsOutbox.Entry(tokenID: call.tokenID, publicID: AppleAdsOutbox.text(of: token.publicID), site: token.site,
                                         receivedAt: token.receivedAt)
        entry.status = call.status
        entry.calls = token.calls
        entry.lastHTTPStatus = token.lastHTTPStatus
        entry.answeredAt = call.at
        entry.record = call.record
        return entry
    }
}

extension AppleAdsOutbox {
    /// The outbox's series for `/metrics`: what waits, how old the oldest is, what calls came
    /// to, and whether calls are paused.
    func prometheusText(now: Timestamp) -> String {
        let (pending, oldest, counts, pause) = state.withLock { s in
            (s.pending.count + s.queued, s.oldestPending()?.receivedAt, s.counts, s.schedule.pause)
        }
        var out = MetricSeries.gauge("attribution_apple_ads_rebuild_pending",
                                     "1 while the outbox reads the log again after a start found a digest it could not trust (its paths answer 503 meanwhile, and the gauges below are not yet its).",
                                     isReady ? 0 : 1)
        out += "# HELP attribution_apple_ads_pending Apple Ads tokens without a final answer (the limit is attribution_apple_ads_max_pending).\n"
        out += "# TYPE attribution_apple_ads_pending gauge\nattribution_apple_ads_pending \(pending)\n"
        out += "# HELP attribution_apple_ads_tokens_in_memory Tokens the outbox holds: waiting, answered in the last day, or settled by records from before 2026-11-26.\n"
        out += "# TYPE attribution_apple_ads_tokens_in_memory gauge\nattribution_apple_ads_tokens_in_memory \(entriesInMemory)\n"
        out += "# HELP attribution_apple_ads_max_pending Tokens that may wait for Apple at once; past it new ones are answered 503.\n"
        out += "# TYPE attribution_apple_ads_max_pending gauge\nattribution_apple_ads_max_pending \(maxPending)\n"
        let age = oldest.map { max(0, now.millisecondsSinceEpoch - $0.millisecondsSinceEpoch) / 1000 } ?? 0
        out += "# HELP attribution_apple_ads_oldest_pending_seconds Age of the oldest token still waiting for Apple's final answer (0: none).\n"
        out += "# TYPE attribution_apple_ads_oldest_pending_seconds gauge\nattribution_apple_ads_oldest_pending_seconds \(age)\n"
        out += "# HELP attribution_apple_ads_calls_total Calls to Apple's attribution API since start, by what came of them.\n"
        out += "# TYPE attribution_apple_ads_calls_total counter\n"
        for outcome in ["attributed", "not_attributed", "invalid_token", "not_found", "refused", "retry_not_found", "unavailable", "expired"] {
            out += "attribution_apple_ads_calls_total{outcome=\"\(outcome)\"} \(counts.calls[outcome, default: 0])\n"
        }
        out += "# HELP attribution_apple_ads_backlogged_total Tokens refused with 503 because the outbox was full.\n"
        out += "# TYPE attribution_apple_ads_backlogged_total counter\nattribution_apple_ads_backlogged_total \(counts.backlogged)\n"
        out += "# HELP attribution_apple_ads_api_paused 1 while calls wait because Apple's API did not answer; the next probe's time is in _paused_until_seconds.\n"
        out += "# TYPE attribution_apple_ads_api_paused gauge\nattribution_apple_ads_api_paused \(pause == nil ? 0 : 1)\n"
        out += "# HELP attribution_apple_ads_api_paused_until_seconds When the next probe of a paused API may go, Unix seconds (0: not paused).\n"
        out += "# TYPE attribution_apple_ads_api_paused_until_seconds gauge\n"
        out += "attribution_apple_ads_api_paused_until_seconds \(pause.map { $0.until / 1000 } ?? 0)\n"
        return out
    }
}
