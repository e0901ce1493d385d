import Primitives
import RecordLog

/// A postback as the log keeps it: the body exactly as received, plus what the endpoint decided.
public struct StoredPostback: Sendable, Equatable {
    public var id: UInt64
    public var receivedAt: Timestamp
    /// From the record's header: SKAdNetwork or AdAttributionKit.
    public var `protocol`: AttributionProtocol
    public var draft: Draft

    /// What the endpoint knows before the store assigns an id and a time.
    public struct Draft: Sendable, Equatable {
        public var `protocol`: AttributionProtocol
        /// The served site it was sent to.
        public var site: String
        public var verdict: PostbackVerdict
        public var reasons: [String]
        public var signature: SignatureOutcome
        /// The test key that signed it, when one did.
        public var keyName: String?
        public var duplicateKey: String
        /// `PostbackContent.fingerprint` of the body: equal for a device's retries.
        public var contentHash: UInt64
        public var body: [UInt8]
        /// The request's `Content-Type`, as sent (nil: none, or a record written before it was kept):
        /// what a relay sends the copy with.
        public var contentType: String?

        public init(protocol: AttributionProtocol, site: String, verdict: PostbackVerdict, reasons: [String],
                    signature: SignatureOutcome, keyName: String?, duplicateKey: String, contentHash: UInt64, body: [UInt8],
                    contentType: String? = nil) {
            self.protocol = `protocol`
            self.site = site
            self.verdict = verdict
            self.reasons = reasons
            self.signature = signature
            self.keyName = keyName
            self.duplicateKey = duplicateKey
            self.contentHash = contentHash
            self.body = body
            self.contentType = contentType
        }
    }

    public init(id: UInt64, receivedAt: Timestamp, draft: Draft) {
        self.id = id
        self.receivedAt = receivedAt
        self.protocol = draft.protocol
        self.draft = draft
    }

    // MARK: - Payload encoding
    //
    // After the store's id and time: u8 format (1), u8 verdict, u8 signature outcome, u64 content
    // hash, then site, duplicate key and test-key name (empty for none) each as u16 length +
    // UTF-8, u8 reason count with each reason as u8 length + UTF-8, and u32 body length + body;
    // then the Content-Type as u16 length + UTF-8 (at most 256 bytes; empty for none). The
    // Content-Type comes after everything an earlier version reads, which stops before it: the
    // format stays 1, and a log written now is still read by an older binary.

    static func encodePayload(_ draft: Draft, into out: inout [UInt8]) {
        out.append(1)
        out.append(draft.verdict.rawValue)
        out.append(draft.signature.rawValue)
        out.appendLE(draft.contentHash)
        appendText(draft.site, lengthBytes: 2, into: &out)
        appendText(draft.duplicateKey, lengthBytes: 2, into: &out)
        appendText(draft.keyName ?? "", lengthBytes: 2, into: &out)
        let reasons = draft.reasons.prefix(255)
        out.append(UInt8(reasons.count))
        for reason in reasons { appendText(reason, lengthBytes: 1, into: &out) }
        out.appendLE(UInt32(draft.body.count))
        out.append(contentsOf: draft.body)
        appendText(cut(draft.contentType ?? "", toBytes: maxContentType), lengthBytes: 2, into: &out)
    }

    /// A `Content-Type` longer than this is kept cut: no device sends one near it.
    static let maxContentType = 256

    /// `text`'s first characters that fit in `limit` bytes of UTF-8, never half of one.
    static func cut(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var bytes = 0
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            bytes += String(scalar).utf8.count
            guard bytes <= limit else { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// `text`'s UTF-8 after its length, in `lengthBytes` bytes (1 or 2), cut to what that can say.
    private static func appendText(_ text: String, lengthBytes: Int, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            let count = min(bytes.count, lengthBytes == 1 ? Int(UInt8.max) : Int(UInt16.max))
            if lengthBytes == 1 { out.append(UInt8(count)) } else { out.appendLE(UInt16(count)) }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<count]))
        }
    }

    /// The site a postback's record was sent to, read without the rest: nil if it is not one.
    public static func site(of record: RecordLog.RecordView) -> String? {
        let p = record.payload
        guard record.kind == RecordKind.postback.number, p.count >= 13, p[0] == 1 else { return nil }
        let length = Int(p.loadLE(UInt16.self, at: 11))
        guard 13 + length <= p.count else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: p[13..<(13 + length)]), as: UTF8.self)
    }

    /// The postback a record holds, or nil if the record is not one this version can read.
    public static func decode(_ record: RecordLog.RecordView) -> StoredPostback? {
        guard record.kind == RecordKind.postback.number, let proto = AttributionProtocol(logTag: record.tag) else { return nil }
        var r = PayloadReader(record.payload)
        return decodeDraft(&r, proto: proto).map { StoredPostback(id: record.id, receivedAt: record.time, draft: $0) }
    }

    /// The draft `r` holds from its start (`encodePayload`'s bytes).
    static func decodeDraft(_ r: inout PayloadReader, proto: AttributionProtocol) -> Draft? {
        guard r.u8() == 1, let verdict = r.u8().flatMap(PostbackVerdict.init), let signature = r.u8().flatMap(SignatureOutcome.init),
              let contentHash = r.u64(), let site = r.text16(), let duplicateKey = r.text16(), let keyName = r.text16(),
              let reasonCount = r.u8() else { return nil }
        var reasons: [String] = []
        for _ in 0..<reasonCount {
            guard let length = r.u8(), let reason = r.text(Int(length)) else { return nil }
            reasons.append(reason)
        }
        guard let bodyLength = r.u32(), let body = r.bytes(Int(bodyLength)) else { return nil }
        // Absent from records written before it was kept.
        let contentType = r.text16()
        return Draft(protocol: proto, site: site, verdict: verdict, reasons: reasons, signature: signature,
                     keyName: keyName.isEmpty ? nil : keyName, duplicateKey: duplicateKey, contentHash: contentHash, body: body,
                     contentType: contentType.flatMap { $0.isEmpty ? nil : $0 })
    }
}

extension RecordKind {
    /// A postback copy, SKAdNetwork or AdAttributionKit by its tag (`StoredPostback`).
    public static let postback = RecordKind(3, name: "postback")
    /// A repeated delivery of a stored postback: not stored again, only counted (its payload is
    /// the stored one's id).
    public static let postbackRetry = RecordKind(4, name: "postback_retry")
    /// A postback an app's development URL took (`StoredDevelopmentPostback`): kept apart from the
    /// postbacks, in no count, and relayed only to a destination that asks for development ones.
    public static let developmentPostback = RecordKind(7, name: "development_postback")
}
