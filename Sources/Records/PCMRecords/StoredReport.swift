import PCM
import Primitives
import RecordLog

/// A report as the log keeps it: the body exactly as received, plus what the endpoint decided.
///
/// The site is not stored: it is `source_site` for a source copy and `attributed_on_site` for a
/// destination copy, both in the body.
public struct StoredReport: Sendable, Equatable {
    public var id: UInt64
    public var receivedAt: Timestamp
    /// From the record's header.
    public var `protocol`: AttributionProtocol
    public var role: ReportRole
    public var verdict: Verdict
    /// Notes and quarantine reasons, e.g. `role_from_body`, `dash_keys_normalized`.
    public var reasons: [String]
    /// The request body, byte for byte.
    public var body: [UInt8]
    /// The trigger this destination copy was matched to (each backs at most one).
    public var triggerID: UInt64?
    /// The campaign this source copy was matched to, by name, as registered at receipt.
    public var campaign: String?
    /// When the trigger this destination copy was matched to was recorded: the report's delay.
    public var triggerRecordedAt: Timestamp?
    /// The id of the key that verified the report's source token, and its destination token.
    public var tokenKeyIDs = TokenKeyIDs()
    /// Where the record ends in the log (set when read or written, not stored).
    public var recordEnd = 0

    public enum Verdict: UInt8, Sendable {
        case accepted = 1
        case quarantined = 2

        public var name: String { self == .accepted ? "accepted" : "quarantined" }
    }

    public init(id: UInt64, receivedAt: Timestamp, protocol: AttributionProtocol = .pcm, role: ReportRole, verdict: Verdict,
                reasons: [String], body: [UInt8], triggerID: UInt64? = nil, campaign: String? = nil, triggerRecordedAt: Timestamp? = nil) {
        self.id = id
        self.receivedAt = receivedAt
        self.protocol = `protocol`
        self.role = role
        self.verdict = verdict
        self.reasons = reasons
        self.body = body
        self.triggerID = triggerID
        self.campaign = campaign
        self.triggerRecordedAt = triggerRecordedAt
    }

    /// What the endpoint knows before the store assigns an id and a time.
    /// The ids (base64url SHA-256 of the served key) of the keys that verified a report's tokens.
    public struct TokenKeyIDs: Sendable, Equatable {
        public var source: String?
        public var destination: String?
        public init(source: String? = nil, destination: String? = nil) {
            self.source = source
            self.destination = destination
        }
    }

    public struct Draft: Sendable {
        public var `protocol`: AttributionProtocol = .pcm
        public var role: ReportRole
        public var verdict: Verdict
        public var reasons: [String]
        public var body: [UInt8]
        public var triggerID: UInt64?
        public var campaign: String?
        public var triggerRecordedAt: Timestamp?
        public var tokenKeyIDs = TokenKeyIDs()

        public init(role: ReportRole, verdict: Verdict, reasons: [String], body: [UInt8], triggerID: UInt64? = nil,
                    campaign: String? = nil, triggerRecordedAt: Timestamp? = nil) {
            self.role = role
            self.verdict = verdict
            self.reasons = reasons
            self.body = body
            self.triggerID = triggerID
            self.campaign = campaign
            self.triggerRecordedAt = triggerRecordedAt
        }
    }

    // MARK: - Payload encoding
    //
    // After the store's id and time: u8 role (1 source, 2 destination), u8 verdict, u8 reason
    // count, each reason as u8 length + UTF-8, u32 body length, body; then optional tagged fields,
    // which logs written before they existed simply do not have: tag 1 + u64 trigger id,
    // tag 2 + u8 length + UTF-8 campaign name, tag 3 + i64 trigger recorded-at milliseconds,
    // tag 4 + u8 length + UTF-8 id of the key that verified the source token, tag 5 the same for
    // the destination token.

    static func encodePayload(_ draft: Draft, into out: inout [UInt8]) {
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
        if let triggerID = draft.triggerID {
            out.append(1)
            out.appendLE(triggerID)
        }
        if let campaign = draft.campaign {
            let bytes = campaign.utf8.prefix(255)
            out.append(2)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
        if let time = draft.triggerRecordedAt {
            out.append(3)
            out.appendLE(time.millisecondsSinceEpoch)
        }
        for (tag, id) in [(UInt8(4), draft.tokenKeyIDs.source), (5, draft.tokenKeyIDs.destination)] {
            guard let id else { continue }
            let bytes = id.utf8.prefix(255)
            out.append(tag)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
    }

    /// The report a stored record holds; nil if its protocol is not one this release knows, or
    /// its layout is wrong. `strings` reuses the Strings of reasons and campaigns seen before (a
    /// log holds a few of them millions of times).
    public static func decode(_ record: RecordLog.RecordView, strings: inout InternedStrings) -> StoredReport? {
        let p = record.payload
        guard let recordProtocol = AttributionProtocol(logTag: record.tag), let layout = Layout(p) else { return nil }
        func text(_ range: Range<Int>) -> String { strings.string(UnsafeRawBufferPointer(rebasing: p[range])) }
        var reasons: [String] = []
        reasons.reserveCapacity(layout.reasonCount)
        layout.forEachReason(in: p) { reasons.append(strings.string($0)) }
        var report = StoredReport(id: record.id, receivedAt: record.time, protocol: recordProtocol, role: layout.role,
                                  verdict: layout.verdict, reasons: reasons, body: Array(p[layout.body]),
                                  triggerID: layout.triggerID, campaign: layout.campaign.map(text),
                                  triggerRecordedAt: layout.triggerRecordedAt)
        report.tokenKeyIDs = TokenKeyIDs(source: layout.sourceTokenKeyID.map(text), destination: layout.destinationTokenKeyID.map(text))
        report.recordEnd = record.end
        return report
    }

    /// For remembering verified PCM tokens at replay: the report, decoded only if a reason says
    /// one of its tokens verified, which is nearly never; nil, without reading further, for the rest.
    public static func withVerifiedToken(_ record: RecordLog.RecordView) -> StoredReport? {
        guard record.kind == RecordKind.report.number else { return nil }
        let p = record.payload
        guard p.count >= 7 else { return nil }
        var offset = 3, verified = false
        for _ in 0..<Int(p[2]) {
            guard offset < p.count else { return nil }
            let length = Int(p[offset])
            guard offset + 1 + length <= p.count else { return nil }
            let reason = UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)])
            if reason.elementsEqual("source_token_verified".utf8) || reason.elementsEqual("destination_token_verified".utf8) { verified = true }
            offset += 1 + length
        }
        guard verified else { return nil }
        var strings = InternedStrings()
        return decode(record, strings: &strings)
    }

    /// The trigger id of a destination copy without decoding the rest, for replaying the ledger.
    static func peekTriggerID(_ p: UnsafeRawBufferPointer) -> UInt64? {
        guard p.count >= 7 else { return nil }
        var offset = 3
        for _ in 0..<Int(p[2]) {
            guard offset < p.count else { return nil }
            offset += 1 + Int(p[offset])
        }
        guard offset + 4 <= p.count else { return nil }
        offset += 4 + Int(p.loadLE(UInt32.self, at: offset))
        guard offset + 9 <= p.count, p[offset] == 1 else { return nil }
        return p.loadLE(UInt64.self, at: offset + 1)
    }
}

extension RecordKind {
    /// A PCM report as received, with its role, verdict and reasons (`StoredReport`).
    public static let report = RecordKind(1, name: "report")
    /// A conversion trigger, for the ledger (`StoredTrigger`).
    public static let trigger = RecordKind(2, name: "trigger")
}
