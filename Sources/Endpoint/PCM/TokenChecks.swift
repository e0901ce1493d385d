import Locking
import PCM
import PCMRecords
import Primitives
import ReportStore
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
/// - `…_token_replayed`: it verified, but another report of the same role carried it (quarantined).
/// With `--require-tokens`, a report with no pair at all is quarantined as `token_missing`.
///
/// Only verified tokens are remembered: each one is a signature the site itself gave out, so the
/// set grows with the sites' real clicks and no sender can fill it with made-up tokens. It holds
/// a 64-bit keyed hash per token, rebuilt from the log at start (`take`).
final class TokenChecks: Sendable {
    enum Side: String, Sendable {
        case source, destination
    }

    let keys: TokenKeyBook
    let requireTokens: Bool
    private let seen = Locked(Set<UInt64>())

    init(keys: TokenKeyBook, requireTokens: Bool) {
        self.keys = keys
        self.requireTokens = requireTokens
    }

    struct Outcome: Sendable {
        var reasons: [String] = []
        var quarantine = false
        /// What to forget should the report not be stored after all.
        var remembered: [UInt64] = []
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
            let fingerprint = Self.fingerprint(token, side: side, role: role)
            if seen.withLock({ $0.insert(fingerprint).inserted }) {
                outcome.reasons.append("\(side.rawValue)_token_verified")
                outcome.remembered.append(fingerprint)
            } else {
                outcome.reasons.append("\(side.rawValue)_token_replayed")
                outcome.quarantine = true
            }
        }
        return outcome
    }

    /// Forgets the tokens of a report that was not stored: the browser's next delivery is no replay.
    func forget(_ outcome: Outcome) {
        guard !outcome.remembered.isEmpty else { return }
        seen.withLock { seen in outcome.remembered.forEach { seen.remove($0) } }
    }

    /// Remembers the verified tokens of a stored report, at replay
    /// (`StoredReport.verifiedTokens` finds them without reading the bodies of the others).
    func take(role: ReportRole, source: Bool, destination: Bool, body: [UInt8]) {
        guard case .success(let report) = PCMReportValidator(siteRules: SiteRules(developmentMode: true)).validate(body: body) else { return }
        seen.withLock { seen in
            if source, let text = report.sourceSecretToken, let token = Base64.decode(text, urlSafe: true) {
                seen.insert(Self.fingerprint(token, side: .source, role: role))
            }
            if destination, let text = report.destinationSecretToken, let token = Base64.decode(text, urlSafe: true) {
                seen.insert(Self.fingerprint(token, side: .destination, role: role))
            }
        }
    }

    var remembered: Int { seen.withLock { $0.count } }

    /// Keyed per process (Swift's `Hasher`): the set is rebuilt at every start, and nobody can
    /// make two tokens collide on purpose.
    private static func fingerprint(_ token: [UInt8], side: Side, role: ReportRole) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(side.rawValue)
        hasher.combine(role.rawValue)
        hasher.combine(token.count)
        token.withUnsafeBytes { hasher.combine(bytes: $0) }
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
