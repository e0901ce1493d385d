/// One thing the check found in an Info.plist: where, which rule, and what to do about it.
public struct PlistFinding: Sendable, Equatable, Codable {
    public enum Severity: String, Sendable, Codable, Comparable {
        /// The device ignores or rejects the setting, or no copy will ever arrive.
        case error
        /// Probably not what the developer meant, but not known to break anything.
        case warning

        public static func < (a: Severity, b: Severity) -> Bool { a == .error && b == .warning }
    }

    public var severity: Severity
    /// The key's path, e.g. `AdAttributionKitConfigurations.AttributionWindows.global.install.view`.
    public var key: String
    public var rule: String
    public var message: String
    /// What to write instead, when there is one obvious fix.
    public var hint: String?

    public init(_ severity: Severity, key: String, rule: String, _ message: String, hint: String? = nil) {
        self.severity = severity
        self.key = key
        self.rule = rule
        self.message = message
        self.hint = hint
    }
}
