import PCM
import Primitives
import SiteOwners
import HTTPServer
import PCMRecords
import ReportStore

/// The well-known trigger URL the conversion pixel redirects to: the trigger goes to the log and
/// then to the site owners' ledger, and the browser gets a 1×1 GIF once it is on disk.
struct TriggerIngest: Sendable {
    let book: SiteOwnerBook
    let store: ReportStore
    let trustedProxies: [AddressRange]
    let servedSites: Set<String>

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        guard let host = RequestedHost.of(request, trustedProxies: trustedProxies),
              let site = SiteOwnerRoutes.site(ofHost: host, siteRules: book.siteRules) else {
            return responder.respond(Problem(status: 400, rule: "invalid_host", field: "Host",
                                             detail: "the trigger URL needs the Host header of a site").response)
        }
        guard servedSites.isEmpty || servedSites.contains(site) else {
            return responder.respond(Problem(status: 421, rule: "site_not_served", field: "Host",
                                             detail: "this endpoint does not serve \(site)").response)
        }
        let path: TriggerPath
        do {
            path = try TriggerPath.parse(path: request.path, queryItems: request.queryItems, siteRules: book.siteRules)
        } catch {
            return responder.respond(Problem(error).response)
        }
        let book = self.book
        store.appendTrigger(site: site, triggerData: path.triggerData, priority: path.priority,
                            attributionSource: path.attributionSource) { result in
            switch result {
            case .success(let trigger):
                book.record(trigger)
                responder.respond(HTTPResponse(status: 200, headers: ["Content-Type": "image/gif", "Cache-Control": "no-store"],
                                               body: Self.transparentGIF))
            case .failure(let error):
                responder.respond(Problem.storeFailed(error, "the trigger could not be recorded").response)
            }
        }
    }

    /// The smallest transparent 1×1 GIF (43 bytes).
    static let transparentGIF: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ]
}
