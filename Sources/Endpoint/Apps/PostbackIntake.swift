import Dispatch
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
///
/// Checking a signature takes about 100 µs, far more than a report. So a postback is only read on
/// arrival; what remains (telling a retry from a new postback, the signature, the append) waits
/// in a queue that each turn of the event loop works through before its commit: for at most
/// `sharedTurnBudget` when reports or triggers wait for that commit too, `ownTurnBudget` when
/// only postbacks do. A burst of postbacks then spreads over several turns instead of holding up
/// the reports that share a turn with it, while a turn of postbacks alone shares its flush among
/// many. The queue's order keeps two copies of one postback in the order they came. A full queue
/// answers 503 with Retry-After, and devices retry.
final class PostbackIntake: Sendable {
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
    /// Seconds of queued work a turn takes on when others wait for its commit, and when none do.
    let sharedTurnBudget: Double
    let ownTurnBudget: Double
    let maxQueued: Int

    private struct Queued: Sendable {
        var proto: AttributionProtocol
        var postback: Postback
        var contentHash: UInt64
        var site: String
        var body: [UInt8]
        var responder: HTTPResponder
    }
    private let queue = Locked<[Queued]>([])
    /// One drain at a time, so that the queue's order is the order of the ledger's decisions.
    private let draining = Locked(())

    init(keyring: PostbackKeyring, ledger: PostbackLedger, servedSites: Set<String>, developmentMode: Bool,
         trustedProxies: [AddressRange], maxPostbackBytes: Int, store: ReportStore, rejections: RejectionLog,
         metrics: EndpointMetrics, clock: @escaping @Sendable () -> Timestamp, sharedTurnBudget: Double = 0.001,
         ownTurnBudget: Double = 0.008, maxQueued: Int = 4096) {
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
        self.sharedTurnBudget = sharedTurnBudget
        self.ownTurnBudget = ownTurnBudget
        self.maxQueued = maxQueued
    }

    /// Reads the request on arrival and queues the rest; answers refusals at once.
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
        let json: JSONValue, postback: Postback
        switch Postback.parse(request.body).flatMap({ json in Postback.read(proto, json: json).map { (json, $0) } }) {
        case .success(let read): (json, postback) = read
        case .failure(let problem): return refuse(Problem(problem), request, responder)
        }
        let item = Queued(proto: proto, postback: postback, contentHash: PostbackContent.fingerprint(json), site: site,
                          body: request.body, responder: responder)
        let queued = queue.withLock { q -> Bool in
            guard q.count < maxQueued else { return false }
            q.append(item)
            return true
        }
        if !queued {
            responder.respond(Problem(status: 503, rule: "postbacks_backlogged",
                                      detail: "\(maxQueued) postbacks are waiting for their signature check; send this one again later").response)
        }
    }

    var hasQueued: Bool { queue.withLock { !$0.isEmpty } }

    /// A turn's share of the queue, before its commit.
    func drainForTurn() {
        drain(budget: store.hasQueued ? sharedTurnBudget : ownTurnBudget)
    }

    /// Works through the queue for at most `budget` seconds (at least one postback), queueing
    /// each one's record for the commit that follows.
    func drain(budget: Double) {
        draining.withLock { _ in
            let start = DispatchTime.now().uptimeNanoseconds
            repeat {
                guard let item = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
                process(item)
            } while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < budget
        }
    }

    private func process(_ item: Queued) {
        let (store, ledger, metrics, proto) = (self.store, self.ledger, self.metrics, item.proto)
        let (responder, contentHash, duplicateKey) = (item.responder, item.contentHash, item.postback.duplicateKey)
        let claim = ledger.classify(duplicateKey: duplicateKey, contentHash: contentHash)
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
        let check = keyring.check(item.postback)
        let (verdict, reasons) = PostbackVerdict.judge(item.postback, signature: check, developmentMode: developmentMode,
                                                       conflictsWithEarlier: claim == .conflict)
        let draft = StoredPostback.Draft(protocol: proto, site: item.site, verdict: verdict, reasons: reasons,
                                         signature: check.outcome, keyName: check.keyName,
                                         duplicateKey: duplicateKey, contentHash: contentHash, body: item.body)
        let id = store.append(draft) { result in
            switch result {
            case .success(let stored):
                metrics.postbackStored(stored)
                responder.respond(Self.acknowledgement(id: stored.id, retry: false, verdict: verdict,
                                                       signature: check.outcome, reasons: reasons))
            case .failure(let error):
                // Never stored, so the device's next delivery must be stored, not counted.
                ledger.release(duplicateKey: duplicateKey, contentHash: contentHash)
                metrics.storeFailed(error)
                responder.respond(Problem.storeFailed(error, "the postback").response)
            }
        }
        if let id { ledger.record(duplicateKey: duplicateKey, contentHash: contentHash, id: id) }
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
