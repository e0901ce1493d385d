import Primitives

/// Decides a report's role from the site it was sent to and the sites this endpoint serves.
public struct RoleResolver: Sendable {
    /// The sites this endpoint answers for (`ServedSites`: none only on a development server).
    public var served: ServedSites

    public init(served: ServedSites) {
        self.served = served
    }

    public struct Resolution: Sendable, Equatable {
        public var role: ReportRole
        /// The site this copy belongs to: `source_site` for a source copy, `attributed_on_site` otherwise.
        public var site: String
        /// Notes stored with the report, e.g. `role_from_body`.
        public var notes: [String]
    }

    /// `host` is the request's host as `RequestedHost` reads it: lowercased, without port or
    /// trailing dot (`HostSyntax.authority`), so that it is normalized once, where it is read.
    public func resolve(_ report: PCMReport, host: String?) -> Result<Resolution, ReportRejection> {
        if let host, host == report.sourceSite, served.contains(host) {
            return .success(Resolution(role: .source, site: host, notes: []))
        }
        if let host, host == report.attributedOnSite, served.contains(host) {
            return .success(Resolution(role: .destination, site: host, notes: []))
        }
        if served.servesAnyHost {
            // Nothing to compare with: both copies may come to one development server under any
            // name. Count it as the source copy and say so.
            return .success(Resolution(role: .source, site: report.sourceSite, notes: ["role_from_body"]))
        }
        guard let host, served.contains(host) else {
            return .failure(ReportRejection(.siteNotServed, ServedSites.notServedDetail(what: "the report", host: host)))
        }
        return .failure(ReportRejection(.siteMismatch, field: "source_site",
            "the report was sent to \"\(host)\" but names neither it as source_site (\"\(report.sourceSite)\") nor as attributed_on_site (\"\(report.attributedOnSite)\")"))
    }
}

