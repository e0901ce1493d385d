import HTTPServer
import Locking
import PCM
import Postbacks
import Primitives
import ReportStore

/// The postback paths: from a POST to a stored postback (or a counted retry) and its 200.
///
/// Devices resend anything but a 200 up to nine times, so the answer is 200 only once the
/// postback, or the record of its retry, is on disk; a refusal is kept for bodies that can never
/// be a postback, so that nothing true is turned away.
struct PostbackIntake: Sendable {
    let keyring: PostbackKeyring
    let ledger: PostbackLedger
    let servedSites: Set<String>
    let developmentMode: Bool
    let trustedProxies: [AddressRange]
    let maxPostbackBytes: Int
    let store: ReportStore
    let rejections: RejectionLog
    let metrics: EndpointMetrics
    let clock: @Sendable () -> Timestamp
    /// Classifying a delivery and queueing it are one step: a second copy in the same turn
    /// must find the first already claimed.
    private let claiming = Locked(())

    init(keyring: PostbackKeyring, ledger: PostbackLedger, servedSites: Set<String>, developmentMode: Bool,
         trustedProxies: [AddressRange], maxPostbackBytes: Int, store: ReportStore, rejections: RejectionLog,
         metrics: EndpointMetrics, clock: @escaping @Sendable () -> Timestamp) {
        self.keyring = keyring
        self.ledger = ledger
        self.servedSites = servedSites
        self.developmentMode = developmentMode
        self.trustedProxies = trustedProxies
        self.maxPostbackBytes = maxPostbackBytes
        self.store = store
        self.rejections = rejections
        self.metrics = metrics
        self.clock = clock
    }

    func handle(_ proto: AttributionProtocol, _ request: HTTPRequest, responder: HTTPResponder) {
        let site: String
        switch resolveSite(request) {
        case .success(let s): site = s
        case .failure(let problem): return refuse(problem, request, responder)
        }
        guard request.body.count <= maxPostbackBytes else {
            return refuse(Problem(status: 413, rule: "body_too_large",
                                  detail: "the body has \(request.body.count) bytes; postbacks are at most \(maxPostbackBytes)"),
                          request, responder)
        }
        let postback: Postback
        switch Postback.read(proto, body: request.body) {
        case .success(let p): postback = p
        case .failure(let problem): return refuse(Problem(problem), request, responder)
        }
        let contentHash = PostbackContent.fingerprint(request.body)
        let (store, ledger, metrics) = (self.store, self.ledger, self.metrics)
        claiming.withLock { _ in
            let claim = ledger.classify(duplicateKey: postback.duplicateKey, contentHash: contentHash)
            if case .retry(let original) = claim {
                store.appendRetry(of: original, protocol: proto) { result in
                    switch result {
                    case .success:
                        ledger.countRetry(of: original)
                        metrics.postbackRetried(proto)
                        responder.respond(Self.acknowledgement(id: original, retry: true, verdict: nil, signature: nil, reasons: []))
                    case .failure(let error):
                        metrics.storeFailed(error)
                        responder.respond(Problem.storeFailed(error, "the postback's retry").response)
                    }
                }
                return
            }
            let check = keyring.check(postback)
            let (verdict, reasons) = PostbackVerdict.judge(postback, signature: check, developmentMode: developmentMode,
                                                           conflictsWithEarlier: claim == .conflict)
            let draft = StoredPostback.Draft(protocol: proto, site: site, verdict: verdict, reasons: reasons,
                                             signature: check.outcome, keyName: check.keyName,
                                             duplicateKey: postback.duplicateKey, contentHash: contentHash, body: request.body)
            let id = store.append(draft) { result in
                switch result {
                case .success(let stored):
                    metrics.postbackStored(stored)
                    responder.respond(Self.acknowledgement(id: stored.id, retry: false, verdict: verdict,
                                                           signature: check.outcome, reasons: reasons))
                case .failure(let error):
                    // Never stored, so the device's next delivery must be stored, not counted.
                    ledger.release(duplicateKey: draft.duplicateKey, contentHash: contentHash)
                    metrics.storeFailed(error)
                    responder.respond(Problem.storeFailed(error, "the postback").response)
                }
            }
            if let id { ledger.record(duplicateKey: postback.duplicateKey, contentHash: contentHash, id: id) }
        }
    }
}

extension PostbackIntake {
    private func resolveSite(_ request: HTTPRequest) -> Result<String, Problem> {
        let host = RequestedHost.of(request, trustedProxies: trustedProxies).map(RoleResolver.normalizeHost)
        if let host, servedSites.contains(host) { return .success(host) }
        // A development server with no --site takes postbacks for whatever name it is called by.
        if servedSites.isEmpty && developmentMode, let host { return .success(host) }
        let served = servedSites.sorted().joined(separator: ", ")
        let sentTo = host.map { "\"\($0)\"" } ?? "a request without a Host header"
        return .failure(Problem(status: 421, rule: "site_not_served",
                                detail: "the postback was sent to \(sentTo), which this endpoint does not serve (it serves \(served))"))
    }

    private func refuse(_ problem: Problem, _ request: HTTPRequest, _ responder: HTTPResponder) {
        rejections.record(time: clock(), status: problem.status, rule: problem.rule, field: problem.field,
                          detail: problem.detail, body: request.body)
        responder.respond(problem.response)
    }

    /// `{"id":3,"verdict":"accepted","signature":"apple","reasons":[]}`, or for a retry
    /// `{"id":3,"retry":true}`. Devices read only the status; the body is for people testing.
    static func acknowledgement(id: UInt64, retry: Bool, verdict: PostbackVerdict?, signature: SignatureOutcome?,
                                reasons: [String]) -> HTTPResponse {
        var json = "{\"id\":\(id)"
        if retry {
            json += ",\"retry\":true"
        } else {
            json += ",\"verdict\":\"\(verdict?.name ?? "")\",\"signature\":\"\(signature?.name ?? "")\",\"reasons\":["
            json += reasons.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        }
        json += "}\n"
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                            body: Array(json.utf8))
    }
}
