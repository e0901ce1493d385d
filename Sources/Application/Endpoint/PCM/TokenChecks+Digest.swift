import PCMRecords
import Primitives
import RecordLog

/// The verified tokens of a sealed segment's reports, 9 bytes and the key id each: a start takes
/// the token sets from these instead of reading (and validating) every report again.
///
/// Entries: `u8 length · key id ("" for reports stored before key ids were kept) · u64 fingerprint`.
extension TokenChecks: SegmentDigestOwner {
    var digestName: String { "verified-tokens-1" }

    func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        var out: [UInt8] = []

        mutating func take(_ record: RecordLog.RecordView) {
            guard let stored = StoredReport.withVerifiedToken(record) else { return }
            for token in TokenChecks.verifiedTokens(of: stored) {
                let keyID = Array(token.keyID.utf8.prefix(255))
                out.append(UInt8(keyID.count))
                out.append(contentsOf: keyID)
                out.appendLE(token.fingerprint)
            }
        }

        func finish() -> [UInt8] { out }
    }

    func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        var tokens: [(keyID: String, fingerprint: UInt64)] = []
        var at = 0
        while at < bytes.count {
            let length = Int(bytes[at])
            guard at + 1 + length + 8 <= bytes.count else { return nil }
            tokens.append((String(decoding: bytes[(at + 1)..<(at + 1 + length)], as: UTF8.self),
                           bytes.loadLE(UInt64.self, at: at + 1 + length)))
            at += 1 + length + 8
        }
        return { [tokens] in self.remember(tokens) }
    }
}
