import Primitives

/// A JWS in compact serialization (RFC 7515 §7.1): three base64url segments joined by dots. The
/// signature covers the first two segments exactly as received, so they are kept as sent: a
/// header re-encoded from its JSON (Apple's escapes `/` as `\/`) would no longer verify.
public struct CompactJWS: Sendable, Equatable {
    /// The bytes the signature covers: `header.payload`, as received.
    public var signingInput: [UInt8]
    public var header: [UInt8]
    public var payload: [UInt8]
    public var signature: [UInt8]

    /// Splits `text`; nil unless it is three base64url segments, the first two non-empty. JWS
    /// segments carry no padding (RFC 7515 §2): with it, two texts would name the same bytes.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !text.utf8.contains(UInt8(ascii: "=")),
              let header = Base64.decode(String(parts[0]), urlSafe: true),
              let payload = Base64.decode(String(parts[1]), urlSafe: true),
              let signature = Base64.decode(String(parts[2]), urlSafe: true) else { return nil }
        self.header = header
        self.payload = payload
        self.signature = signature
        signingInput = Array(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
    }
}
