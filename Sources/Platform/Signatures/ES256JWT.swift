import Crypto
import Foundation

/// A JSON Web Token signed with ES256 (RFC 7515 and 7518: ECDSA P-256 with SHA-256, the
/// signature as the 64 raw bytes R‖S), as Apple's OAuth for the Apple Ads Platform API takes its
/// client secret. The header and claims come in as JSON; this only encodes and signs.
public enum ES256JWT {
    /// `base64url(header).base64url(claims).base64url(signature)`, no padding.
    public static func sign(headerJSON: String, claimsJSON: String, key: P256PrivateKey) -> String {
        let signingInput = base64URL(Array(headerJSON.utf8)) + "." + base64URL(Array(claimsJSON.utf8))
        return signingInput + "." + base64URL(key.rawSignature(for: Array(signingInput.utf8)))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

extension P256PrivateKey {
    /// A key from its PEM file (`-----BEGIN EC PRIVATE KEY-----` as `openssl ecparam -genkey`
    /// writes it, or PKCS #8 `-----BEGIN PRIVATE KEY-----`).
    public init(pemRepresentation: String) throws(SignatureKeyError) {
        do {
            self.init(key: try P256.Signing.PrivateKey(pemRepresentation: pemRepresentation))
        } catch {
            throw SignatureKeyError("not a P-256 private key in PEM (an EC PRIVATE KEY or a PKCS #8 PRIVATE KEY)")
        }
    }

    /// The key as PKCS #8 PEM: what a test writes where an operator would put Apple's key file.
    public var pemRepresentation: String { key.pemRepresentation }
}
