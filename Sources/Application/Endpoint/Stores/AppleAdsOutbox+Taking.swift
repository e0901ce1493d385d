import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

/// What the HTTP paths ask of the outbox: a token taken (or found again), an answer read back by
/// its public id, the summary and the export's snapshot.
extension AppleAdsOutbox {
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
    func storedToken(_ id: UInt64, at start: Int, is token: String) -> Bool? {
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

    func answeredEntry(_ id: UInt64, at start: Int) -> Entry? {
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

}
