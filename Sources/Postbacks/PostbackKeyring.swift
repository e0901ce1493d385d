import AdAttributionKit
import Primitives
import Signatures
import SKAdNetwork

/// The keys postback signatures are checked with: Apple's, fixed, and any test keys the operator
/// trusts with `--postback-key NAME=BASE64-SPKI`. What a test key signs is labelled `test_key`,
/// never counted as Apple-signed.
public struct PostbackKeyring: Sendable {
    private let apple: P256PublicKey
    private let kids: [(kid: String, key: P256PublicKey, development: Bool)]
    private let testKeys: [(name: String, key: P256PublicKey)]

    public struct Check: Sendable, Equatable {
        public var outcome: SignatureOutcome
        /// The test key's name when one signed it.
        public var keyName: String?
    }

    /// `testKeys`: name → base64 DER SubjectPublicKeyInfo of a P-256 key.
    public init(testKeys: [(name: String, subjectPublicKeyInfo: String)] = []) throws(SignatureKeyError) {
        apple = try P256PublicKey(base64SubjectPublicKeyInfo: SKAdNetworkKeys.appleP256)
        var kids: [(String, P256PublicKey, Bool)] = []
        for key in AdAttributionKitKeys.all {
            kids.append((key.kid, try P256PublicKey(base64SubjectPublicKeyInfo: key.subjectPublicKeyInfo), key.isDevelopment))
        }
        self.kids = kids
        var tests: [(String, P256PublicKey)] = []
        for key in testKeys {
            tests.append((key.name, try P256PublicKey(base64SubjectPublicKeyInfo: key.subjectPublicKeyInfo)))
        }
        self.testKeys = tests
    }

    public func check(_ postback: Postback) -> Check {
        switch postback {
        case .skadnetwork(let p): check(p)
        case .adattributionkit(let p): check(p)
        }
    }

    func check(_ p: SKAdNetworkPostback) -> Check {
        guard p.isCheckable else { return Check(outcome: .unverifiable) }
        guard let signature = Base64.decode(p.attributionSignature, urlSafe: false) else { return Check(outcome: .invalid) }
        if apple.isValid(derSignature: signature, for: p.signedMessage) { return Check(outcome: .apple) }
        for test in testKeys where test.key.isValid(derSignature: signature, for: p.signedMessage) {
            return Check(outcome: .testKey, keyName: test.name)
        }
        return Check(outcome: .invalid)
    }

    func check(_ p: AdAttributionKitPostback) -> Check {
        // ES256 only: a JWS naming another algorithm is never checked with a P-256 key.
        guard p.alg == "ES256", let kid = p.kid else { return Check(outcome: .invalid) }
        if let known = kids.first(where: { $0.kid == kid }) {
            guard known.key.isValid(rawSignature: p.jws.signature, for: p.jws.signingInput) else { return Check(outcome: .invalid) }
            return Check(outcome: known.development ? .appleDevelopment : .apple)
        }
        // A test key signs under its own name as kid, or any kid an ad network's setup uses.
        let ordered = testKeys.filter { $0.name == kid } + testKeys.filter { $0.name != kid }
        for test in ordered where test.key.isValid(rawSignature: p.jws.signature, for: p.jws.signingInput) {
            return Check(outcome: .testKey, keyName: test.name)
        }
        return Check(outcome: .invalid)
    }
}
