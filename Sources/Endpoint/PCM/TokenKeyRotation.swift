import Dispatch
import Locking
import Primitives

/// `--token-key-rotation-days N`: every served site's PCM token key is replaced N days after it
/// began to be served, so that no key, and no set of the tokens it signed (`TokenChecks`), lives
/// for ever.
///
/// The successor is made a day ahead (RSA-4096 takes seconds; the thread runs at nice 19) and kept
/// in `token-keys.json` as a scheduled key, then served from its time on. The old key goes on
/// verifying what it signed; nine days after the switch (`TokenKeyBook.verificationWindow`) it is
/// retired for good and its set of tokens is dropped. What a rotation costs is WebKit's rule, not
/// ours: the browser fetches the key again before it sends a report and drops the report if the
/// key changed since the click, so the reports of clicks made before the switch and sent after
/// it are lost (docs/DEPLOYMENT.md, "Token keys"). Hence a period of months, never days.
final class TokenKeyRotation: Sendable {
    let days: Int
    private let keys: TokenKeyBook
    private let clock: EndpointClock
    private let announce: @Sendable (TokenKeyBook.Key) -> Void
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    private let stopping = Locked(false)
    /// Held while successors are made: the thread and a test (or two wake-ups) never make two.
    private let making = Locked(())

    /// How long before its time a successor is made.
    static let lead: Int64 = 86_400_000

    init(days: Int, keys: TokenKeyBook, clock: EndpointClock, announce: @escaping @Sendable (TokenKeyBook.Key) -> Void) {
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
                _ = wake.wait(timeout: .now() + 600)
            }
        }
    }

    func stop() {
        stopping.withLock { $0 = true }
        wake.signal()
        stopped.wait()
    }

    /// When `site`'s next key is served: a successor already scheduled (by this or by hand), else
    /// N days after the served key's start. Nil for a site without a key.
    func nextRotation(for site: String) -> Timestamp? {
        let now = clock.now()
        let own = keys.all.filter { $0.site == site }
        if let scheduled = own.filter({ $0.servesFrom > now }).min(by: { $0.servesFrom < $1.servesFrom }) {
            return scheduled.servesFrom
        }
        guard let served = keys.servedKey(for: site) else { return nil }
        return Timestamp(millisecondsSinceEpoch: served.servesFrom.millisecondsSinceEpoch.addingReportingOverflow(period).partialValue)
    }

    /// Makes the successors due within `lead`, on the calling thread; returns them. A site whose
    /// turn passed while the endpoint was down (or that had an old key when rotation was turned on)
    /// is served its successor `lead` from now: the switch is always announced a day ahead.
    @discardableResult
    func rotateDue() -> [TokenKeyBook.Key] {
        making.withLock { _ in rotateDueNow() }
    }

    private func rotateDueNow() -> [TokenKeyBook.Key] {
        let now = clock.now()
        var made: [TokenKeyBook.Key] = []
        for site in keys.servedSites {
            guard !stopping.withLock({ $0 }), let next = nextRotation(for: site),
                  !keys.all.contains(where: { $0.site == site && $0.servesFrom > now }),
                  next.millisecondsSinceEpoch - Self.lead <= now.millisecondsSinceEpoch else { continue }
            let servesFrom = max(next, Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + Self.lead))
            do {
                let key = try keys.schedule(site: site, servesFrom: servesFrom)
                announce(key)
                made.append(key)
            } catch {
                EventLog.write("token_key_failed", ["site": .string(site), "detail": .string("\(error)")])
            }
        }
        return made
    }
}
