import AppleAdsRecords
import RecordLog

/// What the outbox takes from a sealed segment: the tokens that arrived and settled within it as
/// counts only (`AppleAdsTally`), and as records everything else a start must replay: the tokens
/// still waiting at the segment's end with their calls, those settled by records written before
/// final calls carried their token (kept whole, as `legacy`), and the calls of tokens that came
/// before the segment.
///
/// The section: `AppleAdsTally.encoded()` · u32 records · `RecordCopy`s, in log order within each
/// token. It is taken only for segments more than a day old, whose settled tokens the outbox no
/// longer holds.
extension AppleAdsOutbox: SegmentDigestOwner {
    var digestName: String { Self.digestSection }
    static let digestSection = "apple-ads-3"

    func digester() -> any SegmentDigester { Digester() }

    struct Digester: SegmentDigester {
        private var held: [UInt64: (records: [UInt8], count: Int, entry: Entry)] = [:]
        private var arrival: [UInt64] = []
        private var foreign: [UInt8] = []
        private var foreignCount = 0
        private var tally = AppleAdsTally()

        mutating func take(_ view: RecordLog.RecordView) {
            if let token = StoredAppleAdsToken.decode(view) {
                var records: [UInt8] = []
                RecordCopy.append(view, to: &records)
                // A second record of one token (never written; a log is not to be trusted) replaces
                // the first, as replay's does.
                if held[token.id] == nil { arrival.append(token.id) }
                held[token.id] = (records, 1, Entry(tokenID: token.id, publicID: AppleAdsOutbox.text(of: token.publicID), site: token.site,
                                                    receivedAt: token.receivedAt))
            } else if let call = StoredAppleAdsCall.decode(view) {
                guard var token = held[call.tokenID] else {
                    RecordCopy.append(view, to: &foreign)
                    foreignCount += 1
                    return
                }
                guard !token.entry.status.isFinal else { return }
                RecordCopy.append(view, to: &token.records)
                token.count += 1
                AppleAdsOutbox.apply(call, to: &token.entry)
                if token.entry.status.isFinal, call.token != nil {
                    tally.add(token.entry)
                    held[call.tokenID] = nil
                } else {
                    held[call.tokenID] = token
                }
            }
        }

        func finish() -> [UInt8] {
            var out = tally.encoded()
            let kept = arrival.compactMap { held[$0] }
            out.appendLE(UInt32(kept.reduce(foreignCount) { $0 + $1.count }))
            for token in kept { out.append(contentsOf: token.records) }
            out.append(contentsOf: foreign)
            return out
        }
    }

    /// A section's tally and where its records are; nil unless it is whole.
    static func read(_ section: [UInt8]) -> (tally: AppleAdsTally, recordsAt: Int, records: Int)? {
        guard let (tally, end) = AppleAdsTally.decode(section, at: 0), end + 4 <= section.count else { return nil }
        let records = Int(section.loadLE(UInt32.self, at: end))
        guard RecordCopy.read(section, from: end + 4, count: records, { _ in }) == section.count else { return nil }
        return (tally, end + 4, records)
    }

    /// The outbox reads its digests itself, after the log is opened (`replay`).
    func readDigest(_ bytes: [UInt8], of digest: SegmentDigest) -> (@Sendable () -> Void)? {
        guard Self.read(bytes) != nil else { return nil }
        return {}
    }
}
