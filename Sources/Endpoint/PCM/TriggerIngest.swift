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
    let rejections: RejectionLog
    let clock: @Sendable () -> Timestamp

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        let site: String
        do {
            site = try SiteOwnerRoutes.site(of: request, trustedProxies: trustedProxies, siteRules: book.siteRules, what: "the trigger URL").site
        } catch {
            return refuse(error, request, responder)
        }
        guard servedSites.isEmpty || servedSites.contains(site) else {
            return refuse(Problem(status: 421, rule: "site_not_served", field: "Host", detail: "this endpoint does not serve \(site)"), request, responder)
        }
        let path: TriggerPath
        do throws(RequestProblem) {
            path = try TriggerPath.parse(path: request.path, queryItems: request.queryItems, siteRules: book.siteRules)
            // A click is never same-site with its destination (WebKit refuses such a link), so a
            // trigger naming the advertiser as its own source can match nothing.
            if path.attributionSource == site {
                throw RequestProblem(.invalid, rule: "same_site", field: "attributionSource",
                                     detail: "attributionSource names \(site), the site the trigger was sent to; it must be the site of the click")
            }
        } catch {
            return refuse(Problem(error), request, responder)
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

    /// Refused triggers are counted and kept in the rejection ring like refused reports: a
    /// misconfigured pixel shows in `/api/rejections` and `/metrics`. A trigger has no body: the
    /// ring keeps the URL it was sent to, which is what a site owner needs to see.
    private func refuse(_ problem: Problem, _ request: HTTPRequest, _ responder: HTTPResponder) {
        rejections.record(time: clock(), status: problem.status, rule: problem.rule, field: problem.field, detail: problem.detail,
                          body: Array(request.target.utf8))
        responder.respond(problem.response)
    }

    /// The smallest transparent 1×1 GIF (43 bytes).
    static let transparentGIF: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ]
}
