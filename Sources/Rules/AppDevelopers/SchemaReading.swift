/// Which version of an app's schema a postback's value is read with.
public enum SchemaReading: Sendable, Hashable {
    /// No version existed when the postback arrived. Version 1 covers everything before it, so
    /// such a postback reads with version 1 once there is one (`SchemaHistory.resolve`).
    case beforeAnyVersion
    case version(Int)
    /// The schema changed while the value could have been set: any version from the first to the
    /// last could be the one the app used. Counted apart, never given one meaning.
    case ambiguous(Int, Int)

    /// The largest version number a history holds: what fits the code.
    public static let maxVersion = 2047

    /// As one number, for tables of numbers and digests: 0 before any version, the version, or
    /// bit 23 with the first version in bits 11–21 and the last in bits 0–10.
    public var code: Int {
        switch self {
        case .beforeAnyVersion: 0
        case .version(let n): min(max(n, 0), Self.maxVersion)
        case .ambiguous(let a, let b): 1 << 23 | min(max(a, 0), Self.maxVersion) << 11 | min(max(b, 0), Self.maxVersion)
        }
    }

    /// The reading a code stands for; a code no reading makes reads as before any version.
    public init(code: Int) {
        if code & (1 << 23) != 0, code >> 24 == 0 {
            self = .ambiguous((code >> 11) & 0x7FF, code & 0x7FF)
        } else if (1...Self.maxVersion).contains(code) {
            self = .version(code)
        } else {
            self = .beforeAnyVersion
        }
    }

    /// The versions the value may have been set under: one, several, or none (no version yet).
    public var versions: ClosedRange<Int>? {
        switch self {
        case .beforeAnyVersion: nil
        case .version(let n): n...n
        case .ambiguous(let a, let b): min(a, b)...max(a, b)
        }
    }

    public var isAmbiguous: Bool {
        if case .ambiguous = self { true } else { false }
    }
}
