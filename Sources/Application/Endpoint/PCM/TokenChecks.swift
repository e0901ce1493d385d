import Locking
import PCM
import PCMRecords
import Primitives
import Signatures

/// Fraud prevention in reports: each `*_secret_token` pair a report carries is checked with the
/// key of the site that signed it (the source site for `source_*`, the destination site for
/// `destination_*`), and a token that verified once is remembered, so that the same click cannot
/// be reported twice to the same role.
///
/// Each pair gives the report one reason, prefixed by its side:
/// - `…_token_verified`: the signature verifies with a key the site has served;
/// - `…_token_invalid`: it verifies with none of them (quarantined);
/// - `…_token_unverifiable`: no key is known for that site (kept, with this note);
/// - `…_token_replayed`: it verified, but another report of the same role carried it (quarantined);
/// - `…_token_possibly_replayed`: it verified, and its key's set, past its exact bound, may hold it
///   (`RememberedTokens`; quarantined: a replay is never missed);
/// - `…_token_key_retired`: it verifies only with a key replaced more than 7 days + 48 h ago, so
///   no browser can have sent it (quarantined).
/// With `--require-tokens`, a report with no pair at all is quarantined as `token_missing`.
///
/// Only verified tokens are remembered: each one is a signature the site's key gave out, so no
/// sender can fill the sets with made-up tokens. But anyone may ask `sign-unlinkable-token/` for
/// signatures, so each key's set is bounded (`RememberedTokens`: exact, then a Bloom filter of
/// fixed size). The sets hold 64-bit SHA-256 prefixes, rebuilt at start from the segments' digests
/// and the log written since (`take`, `TokenChecks+Digest`); a key's set is dropped once the key
/// is retired for good (`TokenKeyStore.isExpired`).
final class TokenChecks: Sendable {
    /// The same two sides a token is signed for.
    typealias Side = UnlinkableTokenRequest.Side

    let keys: TokenKeyStore
    let requireTokens: Bool
    private struct Remembered {
        /// By key id: what each key signed and was seen.
        var seen: [String: RememberedTokens] = [:]
        var lastPrune: Int64?
    }
    private let remembered = Locked(Remembered())
    private let clock: @Sendable () -> Timestamp
    /// Each new key's set (tests make it small).
    private let emptySet: RememberedTokens

    init(keys: TokenKeyStore, requireTokens: Bool, clock: @escaping @Sendable () -> Timestamp,
         emptySet: RememberedTokens = RememberedTokens()) {
        self.keys = keys
        self.requireTokens = requireTokens
        self.clock = clock
        self.emptySet = emptySet
    }

    struct Outcome: Sendable {
        var reasons: [String] = []
        var quarantine = false
        /// What to forget should the report not be stored after all: key id and token hash.
        var remembered: [(keyID: String, fingerprint: UInt64)] = []
        /// The keys that verified the tokens, for the export.
        var keyIDs = StoredReport.TokenKeyIDs()
    }

    /// Checks the report's pairs and remembers what verified, at once: a second copy later in the
    /// same turn is a replay even before the first is on disk.
    func check(_ report: PCMReport, role: ReportRole) -> Outcome {
        var outcome = Outcome()
        // Nearly every report today: nothing to check, nothing allocated.
        if report.sourceSecretToken == nil && report.destinationSecretToken == nil {
            if requireTokens {
                outcome.reasons.append("token_missing")
                outcome.quarantine = true
            }
            return outcome
        }
        let pairs: [(Side, String?, String?, String)] = [
            (.source, report.sourceSecretToken, report.sourceSecretTokenSignature, report.sourceSite),
            (.destination, report.destinationSecretToken, report.destinationSecretTokenSignature, report.attributedOnSite),
        ]
        for (side, tokenText, signatureText, site) in pairs {
            guard let tokenText, let signatureText else { continue }
            guard let token = Base64.decode(tokenText, urlSafe: true), let signature = Base64.decode(signatureText, urlSafe: true) else {
                outcome.reasons.append("\(side.rawValue)_token_invalid")
                outcome.quarantine = true
                continue
            }
            let candidates = keys.verificationKeys(for: site)
            guard !candidates.isEmpty else {
                outcome.reasons.append("\(side.rawValue)_token_unverifiable")
                continue
            }
            guard let verifying = candidates.first(where: { $0.publicKey.isValidSignature(signature, for: token) }) else {
                outcome.reasons.append("\(side.rawValue)_token_invalid")
                outcome.quarantine = true
                continue
            }
            if side == .source { outcome.keyIDs.source = verifying.keyID } else { outcome.keyIDs.destination = verifying.keyID }
            if keys.isExpired(keyID: verifying.keyID) {
                outcome.reasons.append("\(side.rawValue)_token_key_retired")
                outcome.quarantine = true
                continue
            }
            let fingerprint = Self.fingerprint(token, side: side, role: role)
            // (Reports stored before key ids were kept sit under "".)
            let found = remembered.withLock { [emptySet] r -> RememberedTokens.Lookup in
                let legacy = r.seen[""]?.lookup(fingerprint) ?? .absent
                guard legacy == .absent else { return legacy }
                return r.seen[verifying.keyID, default: emptySet].insert(fingerprint)
            }
            switch found {
            case .absent:
                outcome.reasons.append("\(side.rawValue)_token_verified")
                outcome.remembered.append((verifying.keyID, fingerprint))
            case .present:
                outcome.reasons.append("\(side.rawValue)_token_replayed")
                outcome.quarantine = true
            case .possiblyPresent:
                outcome.reasons.append("\(side.rawValue)_token_possibly_replayed")
                outcome.quarantine = true
            }
        }
        pruneNowAndThen()
        return outcome
    }

    /// Forgets the tokens of a report that was not stored: the browser's next delivery is no replay.
    func forget(_ outcome: Outcome) {
        guard !outcome.remembered.isEmpty else { return }
        remembered.withLock { r in outcome.remembered.forEach { _ = r.seen[$0.keyID]?.remove($0.fingerprint) } }
    }

    /// Remembers the verified tokens of a stored report, at replay
    /// (`StoredReport.withVerifiedToken` finds them without reading the bodies of the others).
    func take(_ stored: StoredReport) {
        let tokens = Self.verifiedTokens(of: stored)
        guard !tokens.isEmpty else { return }
        remembered.withLock { [emptySet] r in
            for token in tokens { _ = r.seen[token.keyID, default: emptySet].insert(token.fingerprint) }
        }
    }

    /// The fingerprints of a stored report's verified tokens, under the keys that verified them
    /// (reports stored before key ids were kept share one set, "", never dropped).
    static func verifiedTokens(of stored: StoredReport) -> [(keyID: String, fingerprint: UInt64)] {
        guard case .success(let report) = PCMReportValidator(siteRules: SiteRules(developmentMode: true)).validate(body: stored.body) else { return [] }
        var out: [(keyID: String, fingerprint: UInt64)] = []
        for (side, reason, text, keyID) in [
            (Side.source, "source_token_verified", report.sourceSecretToken, stored.tokenKeyIDs.source),
            (.destination, "destination_token_verified", report.destinationSecretToken, stored.tokenKeyIDs.destination),
        ] where stored.reasons.contains(reason) {
            guard let text, let token = Base64.decode(text, urlSafe: true) else { continue }
            out.append((keyID ?? "", fingerprint(token, side: side, role: stored.role)))
        }
        return out
    }

    /// Takes tokens found in a segment's digest.
    func remember(_ tokens: [(keyID: String, fingerprint: UInt64)]) {
        remembered.withLock { [emptySet] r in
            for token in tokens { _ = r.seen[token.keyID, default: emptySet].insert(token.fingerprint) }
        }
    }

    /// What the sets hold now, for `/metrics`.
    struct Memory: Sendable {
        /// Tokens remembered, exactly or in a filter.
        var tokens = 0
        /// Of those, the ones only a filter holds.
        var approximate = 0
        /// Keys whose set went past its exact bound.
        var filters = 0
        /// The highest false-positive rate among the filters: the share of fresh tokens that key's
        /// reports see quarantined as possibly replayed.
        var worstFalsePositiveRate = 0.0
    }

    var memory: Memory {
        remembered.withLock { r in
            r.seen.values.reduce(into: Memory()) { m, set in
                m.tokens += set.count
                m.approximate += set.approximateCount
                if let filter = set.filter {
                    m.filters += 1
                    m.worstFalsePositiveRate = max(m.worstFalsePositiveRate, filter.falsePositiveRate)
                }
            }
        }
    }

    /// At most once an hour of the endpoint's clock: drops the sets of keys retired for good.
    private func pruneNowAndThen() {
        let now = clock().millisecondsSinceEpoch
        let keyIDs = remembered.withLock { r -> [String]? in
            if let last = r.lastPrune, now >= last, now - last < 3_600_000 { return nil }
            r.lastPrune = now
            return Array(r.seen.keys)
        }
        guard let keyIDs else { return }
        let expired = keyIDs.filter { !$0.isEmpty && keys.isExpired(keyID: $0) }
        guard !expired.isEmpty else { return }
        remembered.withLock { r in expired.forEach { r.seen[$0] = nil } }
    }

    /// SHA-256's first 64 bits over side, role and token: the same in every process, so that
    /// segments' digests can keep it, and nobody can make one token's collide with another's.
    static func fingerprint(_ token: [UInt8], side: Side, role: ReportRole) -> UInt64 {
        Fingerprint.sha256Prefix(Array(side.rawValue.utf8) + [0] + Array(role.rawValue.utf8) + [0], token)
    }
}
