import AdAttributionKit
import Locking
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
    /// SKAdNetwork names no key, so a signature is tried against Apple's and then each test key.
    /// Postbacks come in runs signed by one key, so the key that verified the last one is tried
    /// first: one check instead of two for a test key's run. The outcome does not depend on the
    /// order, since no two of the keys are the same (`init` refuses Apple's as a test key).
    private let lastVerifying = Locked<Int>(0)

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
        let appleKeys = kids.map { $0.1.subjectPublicKeyInfo } + [apple.subjectPublicKeyInfo]
        for key in testKeys {
            let parsed = try P256PublicKey(base64SubjectPublicKeyInfo: key.subjectPublicKeyInfo)
            guard !appleKeys.contains(parsed.subjectPublicKeyInfo) else {
                throw SignatureKeyError("\(key.name) is one of Apple's keys, which are always trusted as Apple's")
            }
            tests.append((key.name, parsed))
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
        // Candidate 0 is Apple's key, candidate k the test key k - 1.
        let first = lastVerifying.withLock { $0 }
        for candidate in [first] + (0...testKeys.count).filter({ $0 != first }) {
            let key = candidate == 0 ? apple : testKeys[candidate - 1].key
            guard key.isValid(derSignature: signature, for: p.signedMessage) else { continue }
            if candidate != first { lastVerifying.withLock { $0 = candidate } }
            return candidate == 0 ? Check(outcome: .apple) : Check(outcome: .testKey, keyName: testKeys[candidate - 1].name)
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
