import DurableFiles
import Dispatch
import Foundation
import Locking
import Primitives
import Signatures

/// The sites' PCM token keys: one RSA-4096 key per served site, made on first start and kept in
/// `token-keys.json` in the data directory (mode 0600, replaced atomically), so that the key bytes
/// served never change by accident; and the public keys of other sites given with
/// `--token-public-key`, for checking tokens this endpoint did not sign.
///
/// A browser fetches the key again before it sends a report and drops the report if the key id
/// changed since the click, so a key must be served for as long as reports signed with it can
/// arrive: 7 days + 48 h after its last signature. Rotating is scheduling a successor
/// (`schedule`): from its `serves_from` on, the successor is served and signs, and the old key
/// only verifies (reports signed with it before the switch are lost by the browser anyway, which
/// is why a rotation is chosen, not routine).
final class TokenKeyStore: Sendable {
    struct Key: Sendable {
        let site: String
        let signing: TokenSigningKey
        let publicKey: TokenPublicKey
        /// base64url(SHA-256(served SubjectPublicKeyInfo)), as the browser computes it.
        let keyID: String
        /// base64url of the served SubjectPublicKeyInfo: what `get-token-public-key` answers.
        let served: String
        let createdAt: Timestamp
        let servesFrom: Timestamp
    }

    /// `token-keys.json`.
    struct File: Codable, Sendable {
        struct Entry: Codable, Sendable {
            var site: String
            /// base64 of the private key's DER.
            var privateKey: String
            var createdAt: Timestamp
            var servesFrom: Timestamp

            enum CodingKeys: String, CodingKey {
                case site, privateKey = "private_key", createdAt = "created_at", servesFrom = "serves_from"
            }
        }
        var keys: [Entry] = []
    }

    static let fileName = "token-keys.json"

    private let file: DurableJSONFile<File>
    private let keys: Locked<[Key]>
    let foreignKeys: [String: TokenPublicKey]
    let servedSites: [String]
    private let clock: @Sendable () -> Timestamp
    private let generating = DispatchGroup()
    private let stopping = Locked(false)
    /// Called with each key made at start, for the log.
    private let announce: @Sendable (Key) -> Void

    /// Whether this book makes keys itself: a served site without one at start, a rotation from
    /// the admin API. Not in a cluster, where every node must serve the same bytes and the keys
    /// come from the one file every node has (`attribution-endpoint token-keys`).
    let makesKeys: Bool

    /// Makes a new signing key: RSA-4096 from the system's randomness (tests hand out fixtures).
    let makeKey: @Sendable () throws -> TokenSigningKey

    init(path: String, makesKeys: Bool = true, servedSites: [String], foreignKeys: [String: TokenPublicKey],
         clock: @escaping @Sendable () -> Timestamp, announce: @escaping @Sendable (Key) -> Void = { _ in },
         makeKey: @escaping @Sendable () throws -> TokenSigningKey = { try TokenSigningKey.generate() }) throws {
        self.makesKeys = makesKeys
        self.makeKey = makeKey
        file = DurableJSONFile(path: path, empty: File(), mode: 0o600)
        keys = Locked(try Self.read(file))
        self.foreignKeys = foreignKeys
        self.servedSites = servedSites
        self.clock = clock
        self.announce = announce
    }

    /// Makes, on a thread of its own, a key for every served site that has none: an RSA-4096 key
    /// takes a second or more, which the start does not wait for. A request that needs one first
    /// waits for it (`servedKey(for:waiting:)`).
    func generateMissing() {
        guard makesKeys, !missingSites.isEmpty else { return }
        let missing = missingSites
        generating.startThread(named: "token-keys") { [self] in
            for site in missing {
                if stopping.withLock({ $0 }) { return }
                do {
                    let now = clock()
                    announce(try add(Self.key(site: site, signing: try makeKey(), createdAt: now, servesFrom: now)))
                } catch {
                    // The site serves no key and signs nothing; its reports are still taken.
                    EventLog.write("token_key_failed", ["site": .string(site), "detail": .string("\(error)")])
                }
            }
        }
    }

    /// Served sites that have no key.
    var missingSites: [String] {
        keys.withLock { keys in servedSites.filter { site in !keys.contains { $0.site == site } } }
    }

    /// Waits for the keys being made at start, if any.
    func waitForGeneration() {
        generating.wait()
    }

    /// Waits for the key being made, if any, and makes no more: the next start makes the rest.
    func stop() {
        stopping.withLock { $0 = true }
        generating.wait()
    }

    /// The key `site` serves and signs with now: the one with the latest `servesFrom` not after
    /// now. With `waiting`, waits for the keys being made at start first (on a worker thread only).
    func servedKey(for site: String, waiting: Bool = false) -> Key? {
        if waiting { generating.wait() }
        return servedKey(for: site, at: clock())
    }

    /// Before any key's time (a clock set back, as the demo's is), the site's first key: a site
    /// with a key always serves one.
    private func servedKey(for site: String, at now: Timestamp) -> Key? {
        keys.withLock { Self.served(in: $0, site: site, at: now) }
    }

    private static func served(in keys: [Key], site: String, at now: Timestamp) -> Key? {
        let own = keys.filter { $0.site == site }
        return own.filter { $0.servesFrom <= now }.max { $0.servesFrom < $1.servesFrom }
            ?? own.min { $0.servesFrom < $1.servesFrom }
    }

    /// Whether `key` is a successor of the key `site` serves at `now` that is not served yet.
    private static func isScheduledSuccessor(_ key: Key, in keys: [Key], site: String, at now: Timestamp) -> Bool {
        guard key.site == site, key.servesFrom > now, let served = served(in: keys, site: site, at: now) else { return false }
        return key.servesFrom > served.servesFrom
    }

    /// Every key that may have signed a token of `site`, the served one first: its own keys,
    /// retired and scheduled included, then a key given with `--token-public-key`.
    func verificationKeys(for site: String) -> [(publicKey: TokenPublicKey, keyID: String)] {
        let served = servedKey(for: site)
        var result = keys.withLock { keys in
            keys.filter { $0.site == site }.sorted { a, b in
                (a.keyID == served?.keyID ? 1 : 0, a.servesFrom) > (b.keyID == served?.keyID ? 1 : 0, b.servesFrom)
            }.map { ($0.publicKey, $0.keyID) }
        }
        if let foreign = foreignKeys[site] { result.append((foreign, Base64URL.encode(foreign.keyID))) }
        return result
    }

    /// How long after it stops being served a key can still have signed a genuine report: clicks
    /// convert for 7 days, and reports come up to 48 h later.
    static let verificationWindow: Int64 = (7 * 24 + 48) * 3_600_000

    /// Whether the key `keyID` was replaced longer ago than `verificationWindow`: a token it
    /// signed can no longer come from a browser (it drops reports whose key changed since the
    /// click), and what it signed need not be remembered. Never for a key given with
    /// `--token-public-key`, whose replacement this endpoint cannot see.
    func isExpired(keyID: String) -> Bool {
        let now = clock()
        return keys.withLock { keys in
            guard let key = keys.first(where: { $0.keyID == keyID }) else { return false }
            let replaced = keys.filter { $0.site == key.site && $0.servesFrom > key.servesFrom && $0.servesFrom <= now }
                .map(\.servesFrom).min()
            guard let replaced else { return false }
            return now.millisecondsSinceEpoch - replaced.millisecondsSinceEpoch > Self.verificationWindow
        }
    }

    /// The earliest a token that can still verify was signed: the oldest making of a key not
    /// expired (a token signed with an expired key is quarantined before it is looked up). Nil
    /// with a `--token-public-key`, whose keys' age this endpoint cannot see; now without keys.
    var oldestVerifiableSignature: Timestamp? {
        guard foreignKeys.isEmpty else { return nil }
        let all = keys.withLock { $0 }
        return all.filter { !isExpired(keyID: $0.keyID) }.map { min($0.createdAt, $0.servesFrom) }.min() ?? clock()
    }

    enum State: String, Sendable {
        /// Served and signing now.
        case served
        /// A successor whose time has not come.
        case scheduled
        /// Replaced: verifies tokens it signed, signs nothing.
        case retired
    }

    func state(of key: Key, at now: Timestamp) -> State {
        let served = servedKey(for: key.site, at: now)
        if served?.keyID == key.keyID { return .served }
        return key.servesFrom > now ? .scheduled : .retired
    }

    /// A successor of `site`'s served key not served yet, if one is scheduled.
    func scheduledSuccessor(for site: String) -> Key? {
        let now = clock()
        return keys.withLock { keys in
            keys.filter { Self.isScheduledSuccessor($0, in: keys, site: site, at: now) }.min { $0.servesFrom < $1.servesFrom }
        }
    }

    /// All keys, for the admin API and `/metrics`.
    var all: [Key] { keys.withLock { $0 } }

    /// Makes a successor for `site`'s key, served from `servesFrom` on: a rotation by hand. A
    /// successor already scheduled and not yet served (a rotation's, or an earlier one by hand)
    /// signed nothing: it is replaced, so that the site switches once. Slow (RSA-4096): call it
    /// off the loop.
    func schedule(site: String, servesFrom: Timestamp) throws -> Key {
        let signing = try makeKey()
        return try update { keys in
            let now = clock()
            let before = keys
            keys.removeAll { Self.isScheduledSuccessor($0, in: before, site: site, at: now) }
            let key = Self.key(site: site, signing: signing, createdAt: now, servesFrom: max(servesFrom, now))
            keys.append(key)
            return key
        }
    }

    /// A rotation's successor for `site`, made with `signing` and served from what `servesFrom`
    /// says given the time it is kept at; nil, and nothing kept, when a successor is already
    /// scheduled (by hand meanwhile).
    func scheduleSuccessor(site: String, signing: TokenSigningKey, servesFrom: (Timestamp) -> Timestamp) throws -> Key? {
        try update { keys in
            let now = clock()
            guard !keys.contains(where: { Self.isScheduledSuccessor($0, in: keys, site: site, at: now) }) else { return nil }
            let key = Self.key(site: site, signing: signing, createdAt: now, servesFrom: servesFrom(now))
            keys.append(key)
            return key
        }
    }

    /// How long after it is replaced a key is forgotten altogether: twice the window in which it
    /// can still have signed a genuine report (`isExpired` is once). Its tokens are then refused as
    /// invalid rather than retired, and neither the file nor each token check grows with every
    /// rotation.
    static let keptAfterReplacement: Int64 = 2 * verificationWindow

    /// Forgets the own keys replaced longer ago than `keptAfterReplacement`; returns their ids.
    @discardableResult
    func forgetOldKeys() throws -> [String] {
        try update { keys in
            let now = clock()
            let old = keys.filter { key in
                let replaced = keys.filter { $0.site == key.site && $0.servesFrom > key.servesFrom && $0.servesFrom <= now }
                    .map(\.servesFrom).min()
                return replaced.map { now.millisecondsSinceEpoch - $0.millisecondsSinceEpoch > Self.keptAfterReplacement } ?? false
            }.map(\.keyID)
            keys.removeAll { old.contains($0.keyID) }
            return old
        }
    }

    /// What a cluster's reload changes in the keys held, from the shared file.
    struct FileChange: Sendable {
        /// Keys the file holds that this node does not: a successor added with `token-keys add`.
        var added: [Key] = []
        /// Successors this node held, not served yet, that the file no longer holds: `token-keys
        /// add` replaces a scheduled successor, and a node must not switch to one no other has.
        var withdrawn: [Key] = []
        var isEmpty: Bool { added.isEmpty && withdrawn.isEmpty }
    }

    /// A cluster's reload: the shared file's keys against the ones held at `now`. The file is the
    /// operator's, read and not written. A served or retired key the file no longer holds stays
    /// until a restart: reports it signed may still arrive.
    func changeFromFile(at now: Timestamp) throws -> FileChange {
        guard !makesKeys else { return FileChange() }
        let inFile = try Self.read(file)
        let held = all
        let inFileIDs = Set(inFile.map(\.keyID)), heldIDs = Set(held.map(\.keyID))
        return FileChange(added: inFile.filter { !heldIDs.contains($0.keyID) },
                          withdrawn: held.filter { $0.servesFrom > now && !inFileIDs.contains($0.keyID) })
    }

    /// Applies `change` (from `changeFromFile`): added keys served from their `serves_from` on.
    func take(_ change: FileChange) {
        let withdrawn = Set(change.withdrawn.map(\.keyID))
        keys.withLock { keys in
            keys.removeAll { withdrawn.contains($0.keyID) }
            keys += change.added.filter { key in !keys.contains { $0.keyID == key.keyID } }
        }
    }

    private static func read(_ file: DurableJSONFile<File>) throws -> [Key] {
        try file.load().keys.map { entry in
            guard let der = Base64.decode(entry.privateKey, urlSafe: false) else {
                throw DurableFileError(description: "\(file.path): the key of \(entry.site) is not base64")
            }
            do {
                return Self.key(site: entry.site, signing: try TokenSigningKey(derRepresentation: der),
                                createdAt: entry.createdAt, servesFrom: entry.servesFrom)
            } catch {
                throw DurableFileError(description: "\(file.path): the key of \(entry.site): \(error)")
            }
        }
    }

    /// Keeps `key`, on disk first.
    private func add(_ key: Key) throws -> Key {
        try update { keys in
            keys.append(key)
            return key
        }
    }

    /// Changes the keys under the book's lock, on disk first: the file is written with the
    /// changed list, and only then does memory change (a failed write changes nothing).
    private func update<T>(_ change: (inout [Key]) throws -> T) throws -> T {
        try keys.withLock { keys in
            var next = keys
            let result = try change(&next)
            guard next.map(\.keyID) != keys.map(\.keyID) else { return result }
            try file.save(File(keys: next.map {
                File.Entry(site: $0.site, privateKey: Data($0.signing.derRepresentation).base64EncodedString(),
                           createdAt: $0.createdAt, servesFrom: $0.servesFrom)
            }))
            keys = next
            return result
        }
    }

    private static func key(site: String, signing: TokenSigningKey, createdAt: Timestamp, servesFrom: Timestamp) -> Key {
        let publicKey = signing.publicKey
        return Key(site: site, signing: signing, publicKey: publicKey, keyID: Base64URL.encode(publicKey.keyID),
                   served: Base64URL.encode(publicKey.subjectPublicKeyInfo), createdAt: createdAt, servesFrom: servesFrom)
    }
}
