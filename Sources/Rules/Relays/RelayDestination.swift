import Primitives

/// Which copies a relay takes, by the protocols' own names.
public enum RelayProtocol: String, Sendable, Codable, CaseIterable, Comparable {
    case skadnetwork
    case adattributionkit
    /// PCM reports, for a served site that wants them as well.
    case pcm

    public static func < (a: RelayProtocol, b: RelayProtocol) -> Bool { a.rawValue < b.rawValue }
}

/// One place the endpoint relays copies to: a URL, and what it receives. Configured for one app
/// (its postbacks, whatever site they were sent to) or for one served site (every copy sent to
/// it: every app's postbacks there, and its PCM reports if it asks for them).
public struct RelayDestination: Sendable, Equatable, Codable {
    /// Which copies, by what the endpoint made of them.
    public enum Copies: String, Sendable, Codable {
        /// Only the copies the endpoint accepted (the default): what a partner would count.
        case accepted
        /// Quarantined ones too (a signature that did not check, a field out of range): for a
        /// partner that judges them itself.
        case all
    }

    /// Names the destination in the API, `/metrics` and its cursor's file: `appsflyer-skan`.
    public var name: String
    /// As `RelayURL` writes it back.
    public var url: String
    /// Exactly one of the two.
    public var appID: Int?
    public var site: String?
    /// Sorted, each once.
    public var protocols: [RelayProtocol]
    public var copies: Copies
    /// Whether it takes postbacks signed with Apple's development keys (off by default: a
    /// partner counting them would count test installs).
    public var development: Bool
    /// Whether it may resolve to loopback, private or link-local addresses (a data team's
    /// collector inside the network). Cloud metadata addresses are refused even then.
    public var `internal`: Bool
    /// For the `X-Attribution-Signature` HMAC: never shown back by the API.
    public var secret: String?

    public init(name: String, url: String, appID: Int? = nil, site: String? = nil, protocols: [RelayProtocol],
                copies: Copies = .accepted, development: Bool = false, internal: Bool = false, secret: String? = nil) {
        self.name = name
        self.url = url
        self.appID = appID
        self.site = site
        self.protocols = protocols
        self.copies = copies
        self.development = development
        self.internal = `internal`
        self.secret = secret
    }

    private enum CodingKeys: String, CodingKey {
        case name, url, appID = "app_id", site, protocols, copies, development, `internal`, secret
    }

    /// Whether a copy with these facts goes here.
    public func takes(_ proto: RelayProtocol, site copySite: String, appID copyApp: Int?, accepted: Bool, development dev: Bool) -> Bool {
        guard protocols.contains(proto), accepted || copies == .all, !dev || development else { return false }
        if let appID { return copyApp == appID }
        return site == copySite
    }

    /// As the API shows it: the secret replaced by whether there is one.
    public var shown: Shown { Shown(destination: self) }

    /// A destination as the API writes it: every field as registered but the secret, which is
    /// `true` or `false`.
    public struct Shown: Sendable, Equatable, Encodable {
        public let destination: RelayDestination

        public var name: String { destination.name }
        public var site: String? { destination.site }
        public var appID: Int? { destination.appID }
        public var hasSecret: Bool { destination.secret != nil }

        public func encode(to encoder: Encoder) throws {
            var withoutSecret = destination
            withoutSecret.secret = nil
            try withoutSecret.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(hasSecret, forKey: .secret)
        }
    }
}
