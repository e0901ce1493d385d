import Primitives

/// A token that can only read: the page, the summaries and the exports, optionally of one
/// advertiser alone. Kept as the SHA-256 of the token, never the token: the file that holds them
/// gives nobody a token that works.
public struct ViewerToken: Sendable, Equatable, Codable {
    /// Eight hex digits, also the token's second part: what `list` shows and `revoke` takes.
    public var id: String
    /// Whom it was given to, for the list: "Acme's dashboard", "agency intern".
    public var label: String
    /// The advertiser whose numbers alone it reads; nil: every advertiser's.
    public var advertiser: String?
    public var createdAt: String
    /// Hex SHA-256 of the whole token text.
    public var sha256: String

    public init(id: String, label: String, advertiser: String?, createdAt: String, sha256: String) {
        self.id = id
        self.label = label
        self.advertiser = advertiser
        self.createdAt = createdAt
        self.sha256 = sha256
    }

    enum CodingKeys: String, CodingKey {
        case id, label, advertiser, createdAt = "created_at", sha256
    }

    /// Viewer tokens read `vt_` + id + `_` + 64 hex digits: told apart from the admin token at a
    /// glance, and found by id without hashing against every token kept.
    public static let prefix = "vt_"

    /// The id a presented token names, or nil if it is not shaped like a viewer token.
    public static func id(inToken token: String) -> String? {
        let bytes = Array(token.utf8)
        guard bytes.count == 3 + 8 + 1 + 64, token.hasPrefix(prefix), bytes[11] == UInt8(ascii: "_"),
              bytes[3...].allSatisfy({ Hex.isDigit($0) || $0 == UInt8(ascii: "_") }) else { return nil }
        return String(decoding: bytes[3..<11], as: UTF8.self)
    }
}

/// The viewer tokens kept, with the rules of adding and revoking them.
public struct ViewerTokenList: Sendable, Equatable, Codable {
    public private(set) var tokens: [ViewerToken] = []

    public init() {}

    public mutating func add(_ token: ViewerToken) throws(RequestProblem) {
        try RegisteredName.check(token.label, field: "label", rule: "invalid_label")
        if let advertiser = token.advertiser { try AdvertiserRegistry.checkID(advertiser, field: "advertiser") }
        guard !tokens.contains(where: { $0.id == token.id }) else {
            throw RequestProblem(.conflict, rule: "duplicate_token", field: "id", detail: "a token with id \(token.id) exists")
        }
        tokens.append(token)
    }

    @discardableResult
    public mutating func revoke(id: String) -> Bool {
        tokens.removeEvery { $0.id == id }
    }

    public func token(id: String) -> ViewerToken? { tokens.first { $0.id == id } }
}
