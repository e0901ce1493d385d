import PCM
import Primitives
import SiteOwners
import HTTPServer
import RecordLog

/// The well-known trigger URL the conversion pixel redirects to: the trigger goes to the log and
/// then to the site owners' ledger, and the browser gets a 1×1 GIF once it is on disk.
struct TriggerHandler: Sendable {
    let book: SiteOwnerStore
    let store: RecordLog
    let context: HandlerContext

    /// A refused trigger is counted and kept in the rejection ring with the URL it was sent to
    /// (`HandlerContext.answer(refusal:to:)`), so that a misconfigured pixel shows in
    /// `/api/rejections` and `/metrics`.
    func handle(_ request: HTTPRequest, responder: HTTPResponder) throws {
        let site = try RequestedHost.registrableSite(of: request, trustedProxies: context.trustedProxies, siteRules: book.siteRules,
                                            what: "the trigger URL").site
        guard context.served.contains(site) else { throw ServedSites.notServed(what: "the trigger URL", host: site) }
        let path = try TriggerPath.parse(path: request.path, queryItems: request.queryItems, siteRules: book.siteRules)
        // A click is never same-site with its destination (WebKit refuses such a link), so a
        // trigger naming the advertiser as its own source can match nothing.
        if path.attributionSource == site {
            throw RequestProblem(.invalid, rule: "same_site", field: "attributionSource",
                                 detail: "attributionSource names \(site), the site the trigger was sent to; it must be the site of the click")
        }
        let book = self.book
        let answer = AnswerOnCommit(responder: responder, metrics: nil, failure: "the trigger could not be recorded")
        let trigger = { @Sendable (record: RecordLog.AppendedRecord) in
            Trigger(id: record.id, recordedAt: record.time, site: site, triggerData: path.triggerData, priority: path.priority,
                    attributionSource: path.attributionSource)
        }
        store.appendTrigger(site: site, triggerData: path.triggerData, priority: path.priority,
                            attributionSource: path.attributionSource, steps: answer.steps(
                                answer: { _ in
                                    HTTPResponse(status: 200, headers: ["Content-Type": "image/gif", "Cache-Control": "no-store"],
                                                 body: Self.transparentGIF)
                                },
                                stored: { record in book.record(trigger(record)) }))
    }

    /// The smallest transparent 1×1 GIF (43 bytes).
    static let transparentGIF: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ]
}
