import Crypto
import Foundation
import _CryptoExtras

/// The RSA-4096 key a site blind-signs PCM unlinkable tokens with: RFC 9474
/// RSABSSA-SHA384-PSS-Deterministic, as WebKit asks for it. The server's whole part of the scheme
/// is `s = m^d mod n` over the blinded message the browser sends; swift-crypto also checks the
/// result against the public key before it is given out, as the RFC requires.
public struct TokenSigningKey: Sendable {
    private let key: _RSA.BlindSigning.PrivateKey<SHA384>

    /// A new random key. Generating an RSA-4096 key takes from a fraction of a second to a few
    /// seconds: done once per site, on first start.
    public static func generate() throws(SignatureKeyError) -> TokenSigningKey {
        do {
            return TokenSigningKey(try _RSA.BlindSigning.PrivateKey(keySize: .bits4096, parameters: .RSABSSA_SHA384_PSS_Deterministic))
        } catch {
            throw SignatureKeyError("could not generate an RSA-4096 key: \(error)")
        }
    }

    /// A key from the DER bytes `derRepresentation` gave, as kept in the data directory.
    public init(derRepresentation der: [UInt8]) throws(SignatureKeyError) {
        let key: _RSA.BlindSigning.PrivateKey<SHA384>
        do {
            key = try _RSA.BlindSigning.PrivateKey(derRepresentation: der, parameters: .RSABSSA_SHA384_PSS_Deterministic)
        } catch {
            throw SignatureKeyError("not an RSA private key")
        }
        guard key.keySizeInBits == 4096 else { throw SignatureKeyError("an RSA-\(key.keySizeInBits) key; PCM tokens use RSA-4096") }
        self.init(key)
    }

    private init(_ key: _RSA.BlindSigning.PrivateKey<SHA384>) {
        self.key = key
    }

    /// The private key, DER, for the key file.
    public var derRepresentation: [UInt8] { Array(key.derRepresentation) }

    public var publicKey: TokenPublicKey {
        // The key was made or read by swift-crypto, so its public half is a valid RSA key.
        try! TokenPublicKey(pkcs1: Array(key.publicKey.pkcs1DERRepresentation))
    }

    /// The blind signature of `blindedMessage`, 512 big-endian bytes; nil when the message is not
    /// 512 bytes or not below the modulus, which is the only way a browser's input can fail.
    public func blindSignature(for blindedMessage: [UInt8]) -> [UInt8]? {
        guard blindedMessage.count == key.keySizeInBits / 8 else { return nil }
        return try? Array(key.blindSignature(for: blindedMessage).rawRepresentation)
    }
}
