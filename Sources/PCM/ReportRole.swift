
/// Which of a report's two copies this is. The browser sends one identical body to the click
/// source and one to the destination; only the site it was sent to tells them apart.
public enum ReportRole: String, Sendable, Equatable {
    case source
    case destination
}

/// Decides a report's role from the site it was sent to and the sites this endpoint serves.
public struct RoleResolver: Sendable {
    /// Registrable domains this endpoint answers for. Empty is allowed only in development mode.
    public var servedSites: Set<String>
    public var developmentMode: Bool

    public init(servedSites: Set<String>, developmentMode: Bool) {
        self.servedSites = servedSites
        self.developmentMode = developmentMode
    }

    public struct Resolution: Sendable, Equatable {
        public var role: ReportRole
        /// The site this copy belongs to: `source_site` for a source copy, `attributed_on_site` otherwise.
        public var site: String
        /// Notes stored with the report, e.g. `role_from_body`.
        public var notes: [String]
    }

    /// `host` is the request's `Host` (or trusted `X-Forwarded-Host`) as received.
    public func resolve(_ report: PCMReport, host rawHost: String?) -> Result<Resolution, ReportRejection> {
        let host = rawHost.map(Self.normalizeHost)
        if let host, host == report.sourceSite, servedSites.isEmpty || servedSites.contains(host) {
            return .success(Resolution(role: .source, site: host, notes: []))
        }
        if let host, host == report.attributedOnSite, servedSites.isEmpty || servedSites.contains(host) {
            return .success(Resolution(role: .destination, site: host, notes: []))
        }
        if servedSites.isEmpty && developmentMode {
            // Nothing to compare with: both copies may come to one development server under any
            // name. Count it as the source copy and say so.
            return .success(Resolution(role: .source, site: report.sourceSite, notes: ["role_from_body"]))
        }
        guard let host, servedSites.contains(host) else {
            // Not which sites it does serve: any browser sees this, and an agency's sites are its clients.
            let sentTo = host.map { "\"\($0)\"" } ?? "a request without a Host header"
            return .failure(ReportRejection(.siteNotServed, "the report was sent to \(sentTo), which this endpoint does not serve"))
        }
        return .failure(ReportRejection(.siteMismatch, field: "source_site",
            "the report was sent to \"\(host)\" but names neither it as source_site (\"\(report.sourceSite)\") nor as attributed_on_site (\"\(report.attributedOnSite)\")"))
    }

    /// Lowercases and drops the port and any trailing dot: `Shop.Example.:443` → `shop.example`.
    public static func normalizeHost(_ host: String) -> String {
        // Nearly every Host header is already a bare lowercase name. Its bytes are checked in
        // place: String.UTF8View's generic iteration cost more than the rest of resolving a role.
        func isBare(_ bytes: some Collection<UInt8>) -> Bool {
            bytes.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 46 }
        }
        let bare = host.utf8.withContiguousStorageIfAvailable(isBare) ?? isBare(host.utf8)
        if bare && host.utf8.last != UInt8(ascii: ".") {
            return host
        }
        var h = Substring(host.lowercased())
        if h.hasPrefix("[") {
            if let close = h.firstIndex(of: "]") { h = h[h.index(after: h.startIndex)..<close] }
        } else if let colon = h.lastIndex(of: ":"), h.firstIndex(of: ":") == colon {
            h = h[..<colon]
        }
        if h.hasSuffix(".") { h = h.dropLast() }
        return String(h)
    }
}
