/// What the signature of a stored postback says, as the export's `signature` column names it.
public enum SignatureOutcome: UInt8, Sendable, CaseIterable {
    /// Apple's production key signed it.
    case apple = 1
    /// One of Apple's development keys signed it: a development flow, never a real install.
    case appleDevelopment = 2
    /// A key given with `--postback-key` signed it: a test, a demo or an ad network's own setup.
    case testKey = 3
    /// No key this endpoint trusts signed it.
    case invalid = 4
    /// It cannot be checked here: SKAdNetwork 1.0 and 2.0 (P-192), or a version not known yet.
    case unverifiable = 5

    /// A key this endpoint trusts signed it: only such a delivery claims its duplicate key, so
    /// that a forgery sent first cannot make the genuine postback a conflict.
    public var isVerified: Bool {
        switch self {
        case .apple, .appleDevelopment, .testKey: true
        case .invalid, .unverifiable: false
        }
    }

    public var name: String {
        switch self {
        case .apple: "apple"
        case .appleDevelopment: "apple_development"
        case .testKey: "test_key"
        case .invalid: "invalid"
        case .unverifiable: "unverifiable"
        }
    }
}
