import Crypto
import Foundation
import _CryptoExtras

/// The public half of a site's PCM token key: what `get-token-public-key` serves, and what checks
/// the `*_secret_token_signature` of a report (RSASSA-PSS, SHA-384, MGF1-SHA-384, salt 48, over the
/// raw token bytes).
public struct TokenPublicKey: Sendable, Equatable {
    private let key: _RSA.Signing.PublicKey
    /// The key's RSAPublicKey (PKCS #1) DER, inside the served SubjectPublicKeyInfo.
    public let pkcs1: [UInt8]

    /// A key from its PKCS #1 RSAPublicKey DER.
    public init(pkcs1 der: [UInt8]) throws(SignatureKeyError) {
        do {
            key = try _RSA.Signing.PublicKey(derRepresentation: der)
        } catch {
            throw SignatureKeyError("not an RSA public key of 2048 bits or more")
        }
        pkcs1 = der
    }

    /// A key from a SubjectPublicKeyInfo as WebKit fetches it (the RSASSA-PSS OID with its
    /// parameters), or with the plain rsaEncryption OID.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(SignatureKeyError) {
        guard let inner = TokenKeyEncoding.publicKeyBits(ofSubjectPublicKeyInfo: der) else {
            throw SignatureKeyError("not a DER SubjectPublicKeyInfo")
        }
        try self.init(pkcs1: inner)
    }

    /// The SubjectPublicKeyInfo WebKit expects: id-RSASSA-PSS with SHA-384, MGF1-SHA-384 and a
    /// 48-byte salt. Its bytes are what the key id is computed over.
    public var subjectPublicKeyInfo: [UInt8] { TokenKeyEncoding.pssSubjectPublicKeyInfo(pkcs1: pkcs1) }

    /// SHA-256 of the served SubjectPublicKeyInfo: the key id the browser compares before it sends
    /// a report (base64url of these bytes).
    public var keyID: [UInt8] { Array(SHA256.hash(data: subjectPublicKeyInfo)) }

    public var bits: Int { key.keySizeInBits }

    /// Whether `signature` is the RSASSA-PSS-SHA384 (salt 48) signature of `token`.
    public func isValidSignature(_ signature: [UInt8], for token: [UInt8]) -> Bool {
        guard signature.count == bits / 8 else { return false }
        return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature),
                                    for: SHA384.hash(data: token), padding: .PSS)
    }

    /// The browser's side of RFC 9474 (prepare and blind; `finalize` later), for the demo, which
    /// plays Safari, and for tests.
    public func blind(token: [UInt8]) throws(SignatureKeyError) -> TokenBlinding {
        do {
            let key = try _RSA.BlindSigning.PublicKey<SHA384>(derRepresentation: pkcs1, parameters: .RSABSSA_SHA384_PSS_Deterministic)
            let prepared = key.prepare(token)
            let result = try key.blind(prepared)
            return TokenBlinding(blindedMessage: Array(result.blindedMessage), key: key, prepared: prepared, inverse: result.inverse)
        } catch {
            throw SignatureKeyError("could not blind: \(error)")
        }
    }

    public static func == (a: TokenPublicKey, b: TokenPublicKey) -> Bool { a.pkcs1 == b.pkcs1 }
}

/// A token blinded for a key: the message to send for signing, and what turns the answer into the
/// token's signature.
public struct TokenBlinding {
    public let blindedMessage: [UInt8]
    fileprivate let key: _RSA.BlindSigning.PublicKey<SHA384>
    fileprivate let prepared: _RSA.BlindSigning.PreparedMessage
    fileprivate let inverse: _RSA.BlindSigning.BlindingInverse

    /// The token's RSASSA-PSS signature from the site's blind signature, or nil if the blind
    /// signature does not verify.
    public func finalize(blindSignature: [UInt8]) -> [UInt8]? {
        try? Array(key.finalize(_RSA.BlindSigning.BlindSignature(rawRepresentation: blindSignature),
                                for: prepared, blindingInverse: inverse).rawRepresentation)
    }
}
