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

    struct State {
        /// Sealed segments the start took from their digests.
        var segmentsFromDigests = 0
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
        /// When each site last had Apple's Developer Mode answer, as the tokens the start read
        /// and those settled since say (the setup view's "it works"); one time per site.
        var lastTest: [String: Timestamp] = [:]
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
            if entry.status == .test {
                let at = entry.answeredAt ?? entry.receivedAt
                if lastTest[entry.site].map({ $0 < at }) ?? true { lastTest[entry.site] = at }
            }
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
    let state = Locked(State())
    let changed = DispatchSemaphore(value: 0)
    let settled = Locked<[DispatchSemaphore]>([])
    let thread = DispatchGroup()
    /// Asks the event loop for a turn, so that it commits what the outbox queued.
    let turns: TurnRequester

    /// Where sealed segments' digests are (`SegmentDigests`): a start takes the tokens settled
    /// in old segments from them, as counts.
    let digestsDirectory: String?
    /// Sealed segments the start took from their digests.
    var segmentsFromDigests: Int { state.withLock { $0.segmentsFromDigests } }

    /// When `site` last had Apple's Developer Mode answer: the time, when this process saw the
    /// token settle (or read it from the log at start); else the start of the last day the
    /// digests' counts hold one.
    func lastTestAnswer(site: String) -> Timestamp? {
        state.withLock { s in
            s.lastTest[site] ?? s.tally.lastTestDay(site: site).map { Timestamp(millisecondsSinceEpoch: Int64($0) * 86_400_000) }
        }
    }

    /// `replayInBackground`: the log is read by `start`'s thread, before its first call, while the
    /// endpoint serves (`isReady` false meanwhile); for a start whose digests do not cover the old
    /// segments, which would read the log from the first one they miss. `beforeReplay` runs there
    /// first (tests hold it).
    /// `tokenHash`: the index's key for a token's text (tests give one that collides).
    let tokenHash: @Sendable (String) -> Int

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

    let beforeReplay: @Sendable () -> Void
    /// Entered by `start` while the replay left to it is under way.
    let replaying = DispatchGroup()

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
}
