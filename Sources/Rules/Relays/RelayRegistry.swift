import Primitives

/// The relay destinations and every rule they follow. A value type with no I/O, like the other
/// registries; the endpoint keeps it in `relays.json` and takes the config file's `relays`.
public struct RelayRegistry: Sendable, Equatable, Codable {
    public private(set) var destinations: [RelayDestination] = []

    public init() {}

    /// Each destination has a thread and a cursor of its own: this many at most.
    public static let maxDestinations = 64
    public static let secretBytes = 32...256

    /// What a destination is checked against: the sites served here and the apps registered.
    public struct Context: Sendable {
        public var servedSites: Set<String>
        public var apps: Set<Int>
        /// `--relay-allow-http`: plain http:// beyond loopback.
        public var allowHTTP: Bool
        /// What a name resolves to (nil: nothing), to refuse one that resolves to nothing or
        /// inside; nil to take names unresolved (the config file's, which a DNS outage at start
        /// must not stop).
        public var resolve: (@Sendable (String) -> [IPAddress]?)?

        public init(servedSites: Set<String>, apps: Set<Int>, allowHTTP: Bool = false,
                    resolve: (@Sendable (String) -> [IPAddress]?)? = nil) {
            self.servedSites = servedSites
            self.apps = apps
            self.allowHTTP = allowHTTP
            self.resolve = resolve
        }
    }

    /// Checks `destination`, writes its URL back as `RelayURL` reads it, and adds it.
    public mutating func add(_ destination: RelayDestination, in context: Context) throws(RequestProblem) {
        var destination = destination
        try Self.checkName(destination.name)
        let url = try RelayURL.parse(destination.url, allowHTTP: context.allowHTTP, allowInternal: destination.internal)
        if let literal = url.literal, literal.kind == .cloudMetadata {
            throw .invalid("url", "internal_address", "names \(literal), a cloud metadata service: never a destination")
        }
        if url.literal == nil, let resolve = context.resolve {
            guard let addresses = resolve(url.host) else {
                throw .invalid("url", "host_does_not_resolve", "names \(url.host.prefix(64)), which resolves to no address")
            }
            if let inside = addresses.first(where: { $0.kind == .cloudMetadata || ($0.isInternal && !destination.internal) }) {
                throw .invalid("url", "internal_address", "names \(url.host.prefix(64)), which resolves to \(inside) (\(inside.kind.rawValue)): a destination inside the endpoint's own networks must be allowed to be internal (\"internal\": true), and a cloud metadata service never")
            }
        }
        destination.url = url.description
        switch (destination.appID, destination.site) {
        case (nil, nil):
            throw .invalid("app_id", "missing_field", "or site is required: the app whose postbacks go there, or the served site whose copies do")
        case (.some, .some):
            throw .invalid("site", "conflicting_fields", "and app_id cannot both be given: a destination is an app's or a site's")
        case (let app?, nil):
            guard context.apps.contains(app) else {
                throw RequestProblem(.conflict, rule: "unknown_app", field: "app_id", detail: "app_id \(app) is not registered (POST /api/apps first)")
            }
            if destination.protocols.contains(.pcm) {
                throw .invalid("protocols", "pcm_needs_site", "may include pcm only for a site's destination: PCM reports belong to sites, not apps")
            }
        case (nil, let site?):
            guard context.servedSites.contains(site) else {
                throw .invalid("site", "site_not_served", "\(site.prefix(64)) is not a site this endpoint serves")
            }
        }
        guard !destination.protocols.isEmpty else {
            throw .invalid("protocols", "missing_field", "must name at least one of skadnetwork, adattributionkit, pcm")
        }
        guard Set(destination.protocols).count == destination.protocols.count else {
            throw .invalid("protocols", "duplicate_protocol", "names a protocol twice")
        }
        destination.protocols.sort()
        if let secret = destination.secret {
            guard Self.secretBytes.contains(secret.utf8.count), secret.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalid("secret", "weak_secret", "must be \(Self.secretBytes.lowerBound) to \(Self.secretBytes.upperBound) printable ASCII characters (`openssl rand -hex 32` makes one)")
            }
        }
        if destinations.contains(where: { $0.name == destination.name }) {
            throw RequestProblem(.conflict, rule: "duplicate_destination", field: "name", detail: "a destination named \(destination.name) is already registered")
        }
        if let same = destinations.first(where: { $0.url == destination.url && $0.appID == destination.appID && $0.site == destination.site }) {
            throw RequestProblem(.conflict, rule: "duplicate_destination", field: "url",
                                 detail: "\(destination.url) already receives these copies as \(same.name): one destination would get each copy twice")
        }
        guard destinations.count < Self.maxDestinations else {
            throw RequestProblem(.conflict, rule: "too_many_destinations", field: nil,
                                 detail: "at most \(Self.maxDestinations) destinations: each has a thread and a cursor of its own")
        }
        destinations.append(destination)
    }

    @discardableResult
    public mutating func remove(name: String) -> Bool {
        let before = destinations.count
        destinations.removeAll { $0.name == name }
        return destinations.count < before
    }

    public func destination(named name: String) -> RelayDestination? { destinations.first { $0.name == name } }

    /// 1 to 40 of `a`–`z`, `0`–`9` and `-`, not starting with `-`: it names a file and a label.
    public static func checkName(_ name: String, field: String = "name") throws(RequestProblem) {
        guard (1...40).contains(name.utf8.count), name.utf8.first != UInt8(ascii: "-"),
              name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }) else {
            throw .invalid(field, "invalid_name", "must be 1–40 of a–z, 0–9 and -, such as \"appsflyer-skan\"")
        }
    }
}
