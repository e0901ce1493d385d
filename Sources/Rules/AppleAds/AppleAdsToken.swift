import Primitives

/// An attribution token from `AAAttribution.attributionToken()`, as the app posts it: text,
/// valid for 24 hours, sent unchanged to Apple's attribution API. Opaque to everyone but Apple.
public enum AppleAdsToken {
    /// Tokens are about a hundred characters to a little over one kilobyte; this leaves room.
    public static let maxBytes = 4096
    /// Apple answers for a token for 24 hours after it was made; the endpoint counts from receipt.
    public static let lifetimeMilliseconds: Int64 = 24 * 3_600_000

    /// The token in `body` (a trailing newline, as `curl --data @file` leaves it, is dropped),
    /// or why it cannot be one.
    public static func read(_ body: [UInt8]) throws(RequestProblem) -> String {
        var bytes = body[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes = bytes.dropLast() }
        guard !bytes.isEmpty else {
            throw RequestProblem(.malformed, rule: "empty_token", field: "body",
                                 detail: "send the token from AAAttribution.attributionToken() as the body, text/plain")
        }
        guard bytes.count <= maxBytes else {
            throw .invalid("body", "token_too_long", "is \(bytes.count) bytes; a token is at most \(maxBytes)")
        }
        // Base64 and its URL-safe variant, with padding: printable ASCII without spaces or quotes.
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) else {
            throw .invalid("body", "not_a_token", "must be the token's text, printable ASCII without spaces")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
