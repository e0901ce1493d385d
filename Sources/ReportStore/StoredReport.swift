import AttributionCore

/// A report as the log keeps it: the body exactly as received, plus what the endpoint decided.
///
/// The site is not stored: it is `source_site` for a source copy and `attributed_on_site` for a
/// destination copy, both in the body.
public struct StoredReport: Sendable, Equatable {
    public var id: UInt64
    public var receivedAt: Timestamp
    public var role: ReportRole
    public var verdict: Verdict
    /// Notes and quarantine reasons, e.g. `role_from_body`, `dash_keys_normalized`.
    public var reasons: [String]
    /// The request body, byte for byte.
    public var body: [UInt8]

    public enum Verdict: UInt8, Sendable {
        case accepted = 1
        case quarantined = 2

        public var name: String { self == .accepted ? "accepted" : "quarantined" }
    }

    public init(id: UInt64, receivedAt: Timestamp, role: ReportRole, verdict: Verdict, reasons: [String], body: [UInt8]) {
        self.id = id
        self.receivedAt = receivedAt
        self.role = role
        self.verdict = verdict
        self.reasons = reasons
        self.body = body
    }

    /// What the endpoint knows before the store assigns an id and a time.
    public struct Draft: Sendable {
        public var role: ReportRole
        public var verdict: Verdict
        public var reasons: [String]
        public var body: [UInt8]

        public init(role: ReportRole, verdict: Verdict, reasons: [String], body: [UInt8]) {
            self.role = role
            self.verdict = verdict
            self.reasons = reasons
            self.body = body
        }
    }

    // MARK: - Payload encoding
    //
    // u64 id, i64 received-at milliseconds, u8 role (1 source, 2 destination), u8 verdict,
    // u8 reason count, each reason as u8 length + UTF-8, u32 body length, body.

    static func encodePayload(_ draft: Draft, id: UInt64, receivedAt: Timestamp, into out: inout [UInt8]) {
        out.appendLE(id)
        out.appendLE(receivedAt.millisecondsSinceEpoch)
        out.append(draft.role == .source ? 1 : 2)
        out.append(draft.verdict.rawValue)
        let reasons = draft.reasons.prefix(255)
        out.append(UInt8(reasons.count))
        for reason in reasons {
            let bytes = reason.utf8.prefix(255)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
        out.appendLE(UInt32(draft.body.count))
        out.append(contentsOf: draft.body)
    }

    /// Decodes a payload whose checksum has been verified; nil if its layout is still wrong.
    static func decodePayload(_ p: UnsafeRawBufferPointer) -> StoredReport? {
        guard p.count >= 23 else { return nil }
        let id = p.loadLE(UInt64.self, at: 0)
        let time = p.loadLE(Int64.self, at: 8)
        guard let role: ReportRole = p[16] == 1 ? .source : p[16] == 2 ? .destination : nil,
              let verdict = Verdict(rawValue: p[17]) else { return nil }
        var offset = 19
        var reasons: [String] = []
        for _ in 0..<Int(p[18]) {
            guard offset < p.count else { return nil }
            let length = Int(p[offset])
            guard offset + 1 + length <= p.count else { return nil }
            reasons.append(String(decoding: UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)]), as: UTF8.self))
            offset += 1 + length
        }
        guard offset + 4 <= p.count else { return nil }
        let bodyLength = Int(p.loadLE(UInt32.self, at: offset))
        offset += 4
        guard offset + bodyLength == p.count else { return nil }
        return StoredReport(id: id, receivedAt: Timestamp(millisecondsSinceEpoch: time), role: role, verdict: verdict,
                            reasons: reasons, body: Array(p[offset...]))
    }

    /// The id and receive time without decoding the rest, for the index.
    static func peekIDAndTime(_ p: UnsafeRawBufferPointer) -> (UInt64, Int64)? {
        guard p.count >= 16 else { return nil }
        return (p.loadLE(UInt64.self, at: 0), p.loadLE(Int64.self, at: 8))
    }
}
