import Foundation
import Primitives
import Signatures
import Testing

/// PCM's token keys against WebKit's published example, and the blind-signing round trip.
@Suite struct TokenKeyTests {
    struct Example: Decodable {
        var token_public_key: String
        var key_id: String
        var secret_token: String
        var secret_token_signature: String
    }

    static let example: Example = {
        let url = Bundle.module.url(forResource: "vectors/pcm_token_example", withExtension: "json")!
        return try! JSONDecoder().decode(Example.self, from: Data(contentsOf: url))
    }()

    static func bytes(_ base64url: String) -> [UInt8] { Base64.decode(base64url, urlSafe: true)! }

    @Test func webKitsKeyIsReadAndWrittenBackByteForByteWithItsKeyID() throws {
        let served = Self.bytes(Self.example.token_public_key)
        let key = try TokenPublicKey(subjectPublicKeyInfo: served)
        #expect(key.bits == 4096)
        #expect(key.subjectPublicKeyInfo == served)
        #expect(Base64URL.encode(key.keyID) == Self.example.key_id)
        #expect(Base64URL.encode(key.subjectPublicKeyInfo).hasPrefix("MIICUjA9BgkqhkiG9w0BAQowMKANMAsGCWCGSAFlAwQCAqEaMBgGCSqGSIb3DQEBCDAL"))
    }

    @Test func webKitsTokenSignatureVerifiesAndAOneBitChangeDoesNot() throws {
        let key = try TokenPublicKey(subjectPublicKeyInfo: Self.bytes(Self.example.token_public_key))
        let token = Self.bytes(Self.example.secret_token)
        let signature = Self.bytes(Self.example.secret_token_signature)
        #expect(key.isValidSignature(signature, for: token))
        var flippedToken = token
        flippedToken[7] ^= 0x10
        #expect(!key.isValidSignature(signature, for: flippedToken))
        var flippedSignature = signature
        flippedSignature[100] ^= 0x01
        #expect(!key.isValidSignature(flippedSignature, for: token))
        #expect(!key.isValidSignature(Array(signature.dropLast()), for: token))
    }

    @Test func notAKeyIsRefused() {
        #expect(throws: SignatureKeyError.self) { try TokenPublicKey(subjectPublicKeyInfo: [0x30, 0x03, 0x02, 0x01, 0x00]) }
        var cut = Self.bytes(Self.example.token_public_key)
        cut.removeLast(9)
        #expect(throws: SignatureKeyError.self) { try TokenPublicKey(subjectPublicKeyInfo: cut) }
        #expect(throws: SignatureKeyError.self) { try TokenSigningKey(derRepresentation: Array("not a key".utf8)) }
    }

    @Test func aBlindSignatureFinalizesIntoATokenSignatureAndTheKeySurvivesItsFile() throws {
        let key = try TokenSigningKey.generate()
        let reloaded = try TokenSigningKey(derRepresentation: key.derRepresentation)
        #expect(reloaded.publicKey == key.publicKey)
        // The same DER as WebKit's example up to the modulus: algorithm, parameters, lengths.
        let ours = reloaded.publicKey.subjectPublicKeyInfo, webKits = Self.bytes(Self.example.token_public_key)
        #expect(ours.count == webKits.count)
        #expect(ours.prefix(81) == webKits.prefix(81))
        #expect(ours.suffix(5) == webKits.suffix(5))

        let token = Array((0..<32).map { UInt8($0 * 7 & 0xFF) })
        let blinding = try key.publicKey.blind(token: token)
        #expect(blinding.blindedMessage.count == 512)
        let blindSignature = try #require(reloaded.blindSignature(for: blinding.blindedMessage))
        let signature = try #require(blinding.finalize(blindSignature: blindSignature))
        #expect(key.publicKey.isValidSignature(signature, for: token))
        #expect(!key.publicKey.isValidSignature(signature, for: Array(token.reversed())))
        // Another key's blind signature does not finalize.
        let other = try TokenSigningKey.generate()
        #expect(blinding.finalize(blindSignature: other.blindSignature(for: blinding.blindedMessage) ?? []) == nil)
    }

    @Test func aBlindedMessageOfTheWrongLengthOrNotBelowTheModulusIsNotSigned() throws {
        let key = try TokenSigningKey.generate()
        #expect(key.blindSignature(for: [UInt8](repeating: 1, count: 511)) == nil)
        #expect(key.blindSignature(for: [UInt8](repeating: 1, count: 513)) == nil)
        #expect(key.blindSignature(for: [UInt8](repeating: 0xFF, count: 512)) == nil)
    }
}
