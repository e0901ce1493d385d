/// Each app's development path: a secret URL (`/development-postbacks/SECRET/`) the developer
/// gives Settings › Developer › Development Postbacks, as Apple advises ("a server URL that's
/// different than the production server URL … a custom path that's difficult to guess"). What
/// arrives there is stored apart and never counted. The admin makes one per app and rotates it;
/// the old secret stops working at once.
public struct DevelopmentPaths: Sendable, Equatable, Codable {
    public struct Path: Sendable, Equatable, Codable {
        public var appID: Int
        /// 32 lowercase hex digits: 128 random bits.
        public var secret: String
        /// Milliseconds since 1970.
        public var createdAt: Int64

        public init(appID: Int, secret: String, createdAt: Int64) {
            self.appID = appID
            self.secret = secret
            self.createdAt = createdAt
        }

        enum CodingKeys: String, CodingKey { case appID = "app_id", secret, createdAt = "created_at" }
    }

    public private(set) var paths: [Path] = []

    public init() {}

    /// The URL path devices post to.
    public static func urlPath(secret: String) -> String { "/development-postbacks/\(secret)/" }

    /// Whether `text` has a secret's shape: anything else is no one's, without a lookup.
    public static func isSecretShaped(_ text: Substring) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// A fresh secret from `random`'s 128 bits.
    public static func makeSecret<R: RandomNumberGenerator>(using random: inout R) -> String {
        (0..<2).map { _ in
            let word = random.next()
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    public func path(appID: Int) -> Path? { paths.first { $0.appID == appID } }

    /// The app whose secret this is. Compared in full, every entry, so that the time taken says
    /// nothing of how much of a guess was right.
    public func appID(secret: Substring) -> Int? {
        var found: Int?
        let guess = Array(secret.utf8)
        for path in paths {
            let known = Array(path.secret.utf8)
            guard known.count == guess.count else { continue }
            var difference: UInt8 = 0
            for i in known.indices { difference |= known[i] ^ guess[i] }
            if difference == 0 { found = path.appID }
        }
        return found
    }

    /// Makes or replaces the app's path.
    public mutating func set(appID: Int, secret: String, at createdAt: Int64) {
        paths.removeAll { $0.appID == appID }
        paths.append(Path(appID: appID, secret: secret, createdAt: createdAt))
    }

    @discardableResult
    public mutating func remove(appID: Int) -> Bool {
        let before = paths.count
        paths.removeAll { $0.appID == appID }
        return paths.count != before
    }
}
