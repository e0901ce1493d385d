import Crypto
import Foundation

/// A P-256 signing key. The endpoint never signs a postback: this is for the demo, which signs
/// its own with a key it trusts through `--postback-key`, for tests, and for the client secret of
/// the Apple Ads Platform API (`ES256JWT`).
public struct P256PrivateKey: Sendable {
    let key: P256.Signing.PrivateKey

    /// A new random key.
    public init() {
        key = P256.Signing.PrivateKey()
    }

    init(key: P256.Signing.PrivateKey) {
        self.key = key
    }

    /// A key from its 32-byte scalar, so that a demo or a test can be repeated.
    public init(rawRepresentation: [UInt8]) throws(SignatureKeyError) {
        do {
            key = try P256.Signing.PrivateKey(rawRepresentation: rawRepresentation)
        } catch {
            throw SignatureKeyError("not a P-256 private scalar")
        }
    }

    public var publicKey: P256PublicKey { P256PublicKey(key.publicKey) }

    /// ECDSA-SHA-256 over `message`, ASN.1 DER.
    public func derSignature(for message: [UInt8]) -> [UInt8] {
        Array((try! key.signature(for: message)).derRepresentation)
    }

    /// ECDSA-SHA-256 over `message`, 64 raw bytes R‖S.
    public func rawSignature(for message: [UInt8]) -> [UInt8] {
        Array((try! key.signature(for: message)).rawRepresentation)
    }
}
