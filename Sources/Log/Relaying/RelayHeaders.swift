import Primitives
import Signatures

/// The headers a relayed copy carries besides its own `Content-Type`, for the receiver:
///
/// - `X-Attribution-Delivery`: the delivery id, 32 hex digits. The same for every attempt of
///   this copy to this destination, a replay's included, and different for every other copy or
///   destination: the relay promises at least once, so a receiver that must count a copy once
///   drops a delivery id it has already seen (after a crash between its answer and the relay's
///   saved cursor, the copy comes again).
/// - `X-Attribution-Protocol`: `skadnetwork`, `adattributionkit` or `pcm`.
/// - `X-Attribution-Received-At`: when the endpoint received the copy (RFC 3339, UTC, ms).
/// - `X-Attribution-Signature`, for a destination with a secret: `t=<unix seconds>,v1=<hex>`,
///   the HMAC-SHA256 of `<t>.` followed by the body, keyed with the secret. A receiver computes
///   the same over the bytes it received and compares in constant time, and refuses a `t` far
///   from its clock (five minutes), so that a recorded delivery cannot be replayed later.
public enum RelayHeaders {
    public static let delivery = "X-Attribution-Delivery"
    public static let protocolName = "X-Attribution-Protocol"
    public static let receivedAt = "X-Attribution-Received-At"
    public static let signature = "X-Attribution-Signature"
    public static let userAgent = "attribution-endpoint-relay/1"

    /// The delivery id of the copy `recordID` of `protocolName` from `node` to `destination`.
    /// The protocol is part of it because record ids are counted per kind: a site's PCM report and
    /// postback can share a number.
    public static func deliveryID(node: String, destination: String, protocolName: String, recordID: UInt64) -> String {
        let digest = Fingerprint.sha256(Array("relay-delivery\u{0}\(node)\u{0}\(destination)\u{0}\(protocolName)\u{0}\(recordID)".utf8))
        return hex(digest.prefix(16))
    }

    /// `t=…,v1=…` for `body` sent at `unixSeconds`.
    public static func signature(secret: String, unixSeconds: Int64, body: [UInt8]) -> String {
        let mac = MessageAuthentication.hmacSHA256(key: Array(secret.utf8), message: Array("\(unixSeconds).".utf8) + body)
        return "t=\(unixSeconds),v1=\(hex(mac))"
    }

    /// Every header of one attempt, in the order sent.
    public static func all(for copy: RelayCopy, node: String, destination: String, secret: String?, now: Timestamp) -> [(String, String)] {
        var headers = [("Content-Type", copy.contentType), ("User-Agent", userAgent),
                       (delivery, deliveryID(node: node, destination: destination, protocolName: copy.protocolName, recordID: copy.recordID)),
                       (protocolName, copy.protocolName), (receivedAt, copy.receivedAt.rfc3339)]
        if let secret {
            headers.append((signature, Self.signature(secret: secret, unixSeconds: now.millisecondsSinceEpoch / 1000, body: copy.body)))
        }
        return headers
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
