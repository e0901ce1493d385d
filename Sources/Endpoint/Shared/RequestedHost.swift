import HTTPServer

/// The host a browser sent a request to: `Host`, or `X-Forwarded-Host` when the peer is a
/// trusted proxy (the front that terminates TLS). Reports, pixels and triggers all need it.
enum RequestedHost {
    static func of(_ request: HTTPRequest, trustedProxies: [AddressRange]) -> String? {
        if let forwarded = request.headers["X-Forwarded-Host"],
           trustedProxies.contains(where: { $0.contains(request.remoteAddress) }) {
            // With several proxies, the last value was added by the one nearest to us.
            return forwarded.split(separator: ",").last.map { String($0.trimmingSpaces) }
        }
        return request.headers["Host"]
    }
}
