import Primitives

/// A relay destination's URL, checked when it is configured: `https://host[:port][/path][?query]`.
///
/// - Only `https://`. A plain `http://` destination is taken on loopback (a collector on the
///   same machine, the tests) or when the operator allows it (`--relay-allow-http`): a copy
///   sent in clear can be read and changed on the way, and its signature header replayed.
/// - No userinfo (`user:password@`): credentials in a URL end up in logs; a destination that
///   needs one takes a secret instead (`X-Attribution-Signature`).
/// - No fragment: it is never sent, so a URL with one does not say what is meant.
/// - The host is a DNS name or an IP literal (`[::1]` for IPv6), by `HostSyntax`; a literal
///   outside the public internet is refused here already unless the destination may be internal.
public struct RelayURL: Sendable, Equatable, CustomStringConvertible {
    public let scheme: String
    /// Lowercase; an IPv6 literal without its brackets.
    public let host: String
    public let port: Int
    /// Starts with `/`.
    public let pathAndQuery: String

    public static let maxLength = 2048

    /// What an operator sees and what the cursor's file is written for: the URL as configured.
    public var description: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(bracketed)\(port == defaultPort ? "" : ":\(port)")\(pathAndQuery)"
    }

    /// An IP literal's address, when the host is one.
    public var literal: IPAddress? { IPAddress(host) }

    /// Whether the host is the machine itself: `localhost` (and any name under it, which
    /// resolvers answer with loopback themselves, RFC 6761) or a loopback literal.
    public var isLoopback: Bool { Self.isLocalhost(host) || literal?.kind == .loopback }

    static func isLocalhost(_ host: String) -> Bool { host == "localhost" || host.hasSuffix(".localhost") }

    public static func parse(_ text: String, field: String = "url", allowHTTP: Bool = false,
                             allowInternal: Bool = false) throws(RequestProblem) -> RelayURL {
        guard text.utf8.count <= maxLength else { throw .invalid(field, "too_long", "must be at most \(maxLength) bytes") }
        // Printable ASCII only: a space, a control character or a raw non-ASCII byte is sent
        // differently by every client, and says nothing a percent-encoded form cannot.
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalid(field, "invalid_url", "must be an https:// URL of printable ASCII, without spaces (percent-encode the rest)")
        }
        guard let schemeEnd = text.range(of: "://") else {
            throw .invalid(field, "invalid_url", "must be an https:// URL such as https://copies.partner.example/skan")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else {
            throw .invalid(field, "unsupported_scheme", "must start with https:// (not \(scheme.prefix(16))://)")
        }
        guard !text.contains("#") else { throw .invalid(field, "fragment_not_allowed", "must not have a fragment (#…): it is never sent") }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<authorityEnd])
        guard !authority.contains("@") else {
            throw .invalid(field, "userinfo_not_allowed", "must not carry a user or password (user@host): give the destination a secret instead")
        }
        guard let (name, port) = HostSyntax.authority(of: authority), !name.isEmpty else {
            throw .invalid(field, "invalid_host", "must name a host: a DNS name or an IP address, such as copies.partner.example")
        }
        var host = name.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let chosenPort = port ?? (scheme == "https" ? 443 : 80)
        guard (1...65_535).contains(chosenPort) else { throw .invalid(field, "invalid_port", "must have a port from 1 to 65535") }
        var path = String(rest[authorityEnd...])
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        let url = RelayURL(scheme: scheme, host: host, port: chosenPort, pathAndQuery: path)
        if let address = url.literal, address.isInternal, !allowInternal {
            throw .invalid(field, "internal_address", "names \(address) (\(address.kind.rawValue)): a destination inside the endpoint's own networks must be allowed to be internal (\"internal\": true)")
        }
        // A name without a dot (other than localhost) resolves through search domains: an
        // internal host, whatever it is called.
        if url.literal == nil, !host.contains("."), !Self.isLocalhost(host) {
            throw .invalid(field, "invalid_host", "must be a fully qualified name such as copies.partner.example, not \(host.prefix(64))")
        }
        // `127.1`, `0x7f.0.0.0x1`, `2130706433`: not an address inet_pton takes, but one the C
        // library's resolver reads as one (inet_aton). No top-level domain is all digits (RFC 3696).
        if url.literal == nil, IPAddress.isLegacyIPv4(host)
            || host.split(separator: ".").last.map({ $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }) == true {
            throw .invalid(field, "invalid_host", "is neither an IP address nor a DNS name: \(host.prefix(64))")
        }
        if Self.isLocalhost(host), !allowInternal {
            throw .invalid(field, "internal_address", "names \(host.prefix(64)), this machine: a destination on it must be allowed to be internal (\"internal\": true)")
        }
        if scheme == "http", !url.isLoopback, !allowHTTP {
            throw .invalid(field, "https_required", "must be https://: plain http:// is only for loopback, or with --relay-allow-http (copies would travel readable and changeable)")
        }
        return url
    }
}
