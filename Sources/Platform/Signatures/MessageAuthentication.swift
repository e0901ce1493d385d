import Crypto

/// HMAC-SHA256 (RFC 2104): what a relay's receiver checks to tell the relay from a stranger.
public enum MessageAuthentication {
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}
