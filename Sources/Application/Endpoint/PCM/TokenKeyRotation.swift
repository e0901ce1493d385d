import Dispatch
import Locking
import Primitives
import Signatures

/// `--token-key-rotation-days N`: every served site's PCM token key is replaced N days after it
/// began to be served, so that no key, and no set of the tokens it signed (`TokenChecks`), lives
/// for ever.
///
/// The successor is made ahead of its turn (RSA-4096 takes seconds; the thread runs at nice 19)
/// and kept in `token-keys.json` as a scheduled key, served from its time on, never sooner than a
/// day after it is kept. The old key goes on verifying what it signed; nine days after the switch
/// (`TokenKeyStore.verificationWindow`) it is retired for good and its set of tokens is dropped, and
/// nine days later still it is forgotten (`TokenKeyStore.forgetOldKeys`). What a rotation costs is
/// WebKit's rule, not ours: the browser fetches the key again before it sends a report and drops
/// the report if the key changed since the click, so the reports of clicks made before the switch
/// and sent after it are lost (docs/DEPLOYMENT.md, "Token keys"). Hence a period of months.
final class TokenKeyRotation: Sendable {
    let days: Int
    private let keys: TokenKeyStore
    private let clock: EndpointClock
    private let announce: @Sendable (TokenKeyStore.Key) -> Void
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    private let stopping = Locked(false)
    /// Held while successors are made: the thread and a test (or two wake-ups) never make two.
    /// Also keeps a key made whose save failed, to try again with rather than make another.
    private let making = Locked<[String: TokenSigningKey]>([:])

    /// How long before its time a successor is kept, at least.
    static let lead: Int64 = 86_400_000

    init(days: Int, keys: TokenKeyStore, clock: EndpointClock, announce: @escaping @Sendable (TokenKeyStore.Key) -> Void) {
        self.days = days
        self.keys = keys
        self.clock = clock
        self.announce = announce
        clock.whenSet { [wake] in wake.signal() }
    }

    private var period: Int64 { Int64(days) * 86_400_000 }

    func start() {
        stopped.startThread(named: "token-key-rotation", priority: .background) { [self] in
            // The keys a first start makes come first: a site without a key has nothing to rotate.
            keys.waitForGeneration()
            while !stopping.withLock({ $0 }) {
                rotateDue()
                _ = try? keys.forgetOldKeys()
                _ = wake.wait(timeout: .now() + .milliseconds(Int(untilNextWork())))
            }
        }
    }

    /// Asks the thread to stop after the key it is making, without waiting for it (the key book's
    /// own stop, which may be making first keys the thread waits for, comes between).
    func requestStop() {
        stopping.withLock { $0 = true }
        wake.signal()
    }

    func stop() {
        requestStop()
        stopped.wait()
    }

    /// Milliseconds until a successor is due to be made, at most ten minutes and at least one second.
    private func untilNextWork() -> Int64 {
        let now = clock.now().millisecondsSinceEpoch
        let due = keys.servedSites.compactMap { nextRotation(for: $0) }.map { $0.millisecondsSinceEpoch - Self.lead - now }
        return min(600_000, max(1_000, due.min() ?? 600_000))
    }

    /// When `site`'s next key is served: a successor already scheduled (by this or by hand), else
    /// N days after the served key's start, or a day from now if that has passed. Nil for a site
    /// without a key.
    func nextRotation(for site: String) -> Timestamp? {
        let now = clock.now()
        guard let served = keys.servedKey(for: site) else { return nil }
        if let scheduled = keys.scheduledSuccessor(for: site) { return scheduled.servesFrom }
        let turn = Timestamp(millisecondsSinceEpoch: served.servesFrom.millisecondsSinceEpoch.addingReportingOverflow(period).partialValue)
        return max(turn, Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + Self.lead))
    }

    /// Makes the successors due within `lead`, on the calling thread; returns them. A site whose
    /// turn passed while the endpoint was down (or that had an old key when rotation was turned on)
    /// is served its successor a day after it is kept: the switch is always announced a day ahead.
    @discardableResult
    func rotateDue() -> [TokenKeyStore.Key] {
        making.withLock { unsaved in
            var made: [TokenKeyStore.Key] = []
            for site in keys.servedSites {
                guard !stopping.withLock({ $0 }), let served = keys.servedKey(for: site) else { continue }
                let now = clock.now()
                let turn = served.servesFrom.millisecondsSinceEpoch.addingReportingOverflow(period).partialValue
                guard keys.scheduledSuccessor(for: site) == nil, turn - Self.lead <= now.millisecondsSinceEpoch else { continue }
                do {
                    let signing = try unsaved[site] ?? keys.makeKey()
                    unsaved[site] = signing
                    // The time is taken once the key exists: making it takes seconds.
                    let key = try keys.scheduleSuccessor(site: site, signing: signing) { keptAt in
                        Timestamp(millisecondsSinceEpoch: max(turn, keptAt.millisecondsSinceEpoch + Self.lead))
                    }
                    unsaved[site] = nil
                    if let key {
                        announce(key)
                        made.append(key)
                    }
                } catch {
                    EventLog.write("token_key_failed", ["site": .string(site), "detail": .string("\(error)")])
                }
            }
            return made
        }
    }
}
