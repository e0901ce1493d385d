import HTTPServer
import Primitives

extension ServedSites {
    /// The served site a request was sent to: its host (through a trusted front's
    /// `X-Forwarded-Host`), which must be served, or 421 `site_not_served`. `what` names the
    /// request in the refusal, e.g. "the postback".
    func site(of request: HTTPRequest, trustedProxies: [AddressRange], what: String) throws(Problem) -> String {
        let host = try RequestedHost.of(request, trustedProxies: trustedProxies)
        if let host, contains(host) { return host }
        throw Self.notServed(what: what, host: host)
    }

    /// 421 `site_not_served`, in the one wording.
    static func notServed(what: String, host: String?) -> Problem {
        Problem(status: 421, rule: "site_not_served", field: "Host", detail: notServedDetail(what: what, host: host))
    }
}
