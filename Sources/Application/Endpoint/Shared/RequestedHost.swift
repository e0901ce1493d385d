import HTTPServer
import Primitives

/// The host a browser or device sent a request to: `Host`, or `X-Forwarded-Host` when the peer is
/// a trusted proxy (the front that terminates TLS). Every path that needs it reads it here, so
/// that a value that is no host is refused the same way everywhere: 400 `invalid_host`.
enum RequestedHost {
    /// The host's name, lowercased, without port or trailing dot; nil when the request names none.
    static func of(_ request: HTTPRequest, trustedProxies: [AddressRange]) throws(Problem) -> String? {
        try authority(of: request, trustedProxies: trustedProxies)?.name
    }

    /// The registrable domain a pixel or trigger request was sent to (`www.shop.example:443` →
    /// `shop.example`) and the port the browser named: 400 `invalid_host` when its host is no
    /// host or names no site.
    static func registrableSite(of request: HTTPRequest, trustedProxies: [AddressRange], siteRules: SiteRules,
                                what: String) throws(Problem) -> (site: String, port: Int?) {
        guard let (host, port) = try authority(of: request, trustedProxies: trustedProxies) else {
            throw Problem(status: 400, rule: "invalid_host", field: "Host", detail: "\(what) needs the Host header of a site")
        }
        switch siteRules.check(host) {
        case nil: return (host, port)
        case .subdomain(let registrable)?: return (registrable, port)
        default:
            throw Problem(status: 400, rule: "invalid_host", field: "Host",
                          detail: "\(what) was sent to \"\(host)\", which is not within a registrable domain")
        }
    }

    /// The host's name (as `of` gives it) and the port the client used, if it named one.
    static func authority(of request: HTTPRequest, trustedProxies: [AddressRange]) throws(Problem) -> (name: String, port: Int?)? {
        if !trustedProxies.isEmpty, request.headers.contains("X-Forwarded-Host"),
           trustedProxies.contains(where: { $0.contains(request.remoteAddress) }) {
            // With several proxies, the last value was added by the one nearest to us, whether
            // they appended to one line or each added a line of its own.
            let forwarded = request.headers.values("X-Forwarded-Host").joined(separator: ",")
            let value = forwarded.split(separator: ",", omittingEmptySubsequences: false).last.map { String($0.trimmingSpaces) } ?? ""
            return try checked(value, field: "X-Forwarded-Host")
        }
        return try request.headers["Host"].map { (value) throws(Problem) in try checked(value, field: "Host") }
    }

    /// Refuses a request whose host is no host, as `of` would, without building the name.
    static func check(_ request: HTTPRequest, trustedProxies: [AddressRange]) throws(Problem) {
        if !trustedProxies.isEmpty, request.headers.contains("X-Forwarded-Host"),
           trustedProxies.contains(where: { $0.contains(request.remoteAddress) }) {
            _ = try of(request, trustedProxies: trustedProxies)
        } else if request.headers.withFirstValue("Host", HostSyntax.isHost) == false, let host = request.headers["Host"] {
            throw invalid(host, field: "Host")
        }
    }

    private static func checked(_ value: String, field: String) throws(Problem) -> (name: String, port: Int?) {
        guard let authority = HostSyntax.authority(of: value) else { throw invalid(value, field: field) }
        return authority
    }

    static func invalid(_ value: String, field: String) -> Problem {
        let shown = value.utf8.count > 100 ? String(value.prefix(100)) + "…" : value
        var quoted = ""
        JSONValue.writeString(shown, to: &quoted)
        return Problem(status: 400, rule: "invalid_host", field: field,
                       detail: "\(field) must be a domain name or an IP address, with an optional port 1–65535; got \(quoted)")
    }
}
