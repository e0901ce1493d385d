import Crypto
import Foundation

/// A P-256 public key that checks ECDSA signatures over SHA-256: how Apple signs SKAdNetwork
/// (2.1 and later) and AdAttributionKit postbacks, and how a test key given with
/// `--postback-key` signs them.
public struct P256PublicKey: Sendable {
    private let key: P256.Signing.PublicKey

    /// A key from its DER SubjectPublicKeyInfo, as Apple publishes it. Another curve is refused.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(SignatureKeyError) {
        do {
            key = try P256.Signing.PublicKey(derRepresentation: der)
        } catch {
            throw SignatureKeyError("not a P-256 SubjectPublicKeyInfo")
        }
    }

    /// A key from the base64 of its DER SubjectPublicKeyInfo.
    public init(base64SubjectPublicKeyInfo text: String) throws(SignatureKeyError) {
        guard let der = Data(base64Encoded: text) else { throw SignatureKeyError("not base64") }
        try self.init(subjectPublicKeyInfo: Array(der))
    }

    init(_ key: P256.Signing.PublicKey) {
        self.key = key
    }

    /// The key as DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] { Array(key.derRepresentation) }

    /// Whether `signature`, ASN.1 DER (`SEQUENCE { r, s }`, as SKAdNetwork sends it), signs `message`.
    public func isValid(derSignature signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
        return key.isValidSignature(parsed, for: message)
    }

    /// Whether `signature`, 64 raw bytes R‖S (as JWS ES256 sends it), signs `message`.
    public func isValid(rawSignature signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return false
        }
        return key.isValidSignature(parsed, for: message)
    }
}

/// A key that cannot be used, and why.
public struct SignatureKeyError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
