import HTTPServer

/// The served site an app's request was sent to: the host it used (through a trusted front's
/// `X-Forwarded-Host`), which must be a `--site`. A development server with no `--site` takes
/// whatever name it is called by.
struct ServedSite: Sendable {
    let sites: Set<String>
    let developmentMode: Bool
    let trustedProxies: [AddressRange]

    /// `what` names the request in the refusal, e.g. "the postback".
    func resolve(_ request: HTTPRequest, what: String) -> Result<String, Problem> {
        let host: String?
        do { host = try RequestedHost.of(request, trustedProxies: trustedProxies) } catch { return .failure(error) }
        if let host, sites.contains(host) { return .success(host) }
        if sites.isEmpty && developmentMode, let host { return .success(host) }
        let sentTo = host.map { "\"\($0)\"" } ?? "a request without a Host header"
        // Not which sites it does serve: anyone can send this request, and an agency's list of
        // sites is its list of clients.
        return .failure(Problem(status: 421, rule: "site_not_served",
                                detail: "\(what) was sent to \(sentTo), which this endpoint does not serve"))
    }
}
