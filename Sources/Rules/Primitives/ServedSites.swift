/// The sites this endpoint serves (`--site`), and the one rule for whether a host is one of them:
/// every path that takes a request for a site (reports, triggers, the pixel, token keys and
/// signatures, postbacks, Apple Ads tokens, conversion values) asks here, and refuses the same way.
///
/// Hosts are compared as `HostSyntax.authority` gives them (lowercased, without port or trailing
/// dot): the request's host is normalized once, where it is read (`RequestedHost`).
public struct ServedSites: Sendable, Equatable {
    public let sites: Set<String>
    /// A development server without `--site` takes whatever name it is called by.
    public let developmentMode: Bool

    public init(_ sites: Set<String>, developmentMode: Bool) {
        self.sites = sites
        self.developmentMode = developmentMode
    }

    /// True on a development server without `--site`: any host is taken as served.
    public var servesAnyHost: Bool { sites.isEmpty && developmentMode }

    /// Whether `host` (normalized) is a site this endpoint serves.
    public func contains(_ host: String) -> Bool {
        sites.contains(host) || servesAnyHost
    }

    /// The served site `host` is, or is a subdomain of (`www.shop.example`): the site a refusal
    /// sent there belongs to. Nil for any other name, or none.
    public func owner(ofHost host: String?) -> String? {
        guard let host else { return nil }
        if servesAnyHost || sites.contains(host) { return host }
        return sites.first { host.hasSuffix("." + $0) }
    }

    /// The refusal's words, the same on every path. They never list the sites that are served:
    /// anyone can send the request, and an agency's sites are its list of clients.
    public static func notServedDetail(what: String, host: String?) -> String {
        guard let host else { return "\(what) came without a Host header, so it names no site this endpoint serves" }
        return "\(what) was sent to \"\(host)\", which this endpoint does not serve"
    }
}
