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
/// Checking a signature takes about 100 µs, and reading a body about 15, far more than a report's
/// whole path. So a postback waits in a line; what ends it (telling a retry from a new postback,
/// the verdict, the append, or a refusal) happens on the event loop at the end of a turn, in
/// arrival order, which keeps two copies of one postback in the order they came.
/// - With more than one core, `WorkerPool` threads (`signature-check-N`) on the other cores read the body and
///   check the signature, and the loop takes up every postback they are done with: a few
///   microseconds each. The loop itself only finds the site and the size.
/// - On a single core, the loop reads the body on arrival, refusing at once what cannot be a
///   postback, and checks signatures at the end of a turn, for at most `sharedTurnBudget` when
///   reports or triggers wait for the same commit and `ownTurnBudget` when none do, so that a
///   burst spreads over turns instead of holding up the reports that share one.
/// A copy of a postback already stored is not checked at all. Past `maxQueued` waiting, the
/// answer is 503 with Retry-After, and devices retry.
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
    let pool: WorkerPool?
    let sharedTurnBudget: Double
    let ownTurnBudget: Double
    let maxQueued: Int

    /// What reading a body gave: a postback and its content's fingerprint, or the refusal of a
    /// body that cannot be one.
    private enum Reading: Sendable {
        case postback(Postback, contentHash: UInt64)
        case refused(Problem)
    }

    /// A reference, so that the line moves pointers, not a postback's fields, as it advances.
    private final class Queued: @unchecked Sendable {
        let proto: AttributionProtocol
        let site: String
        let body: [UInt8]
        let responder: HTTPResponder
        /// Set on arrival on a single core, by a pool thread otherwise.
        var reading: Reading?
        /// The signature's outcome once a pool thread has checked it.
        var check: PostbackKeyring.Check?
        /// Ready for the loop: read and checked, or a copy of a stored postback that needs no check.
        /// These three are read and written under the line's lock only.
        var ready: Bool

        init(proto: AttributionProtocol, site: String, body: [UInt8], responder: HTTPResponder,
             reading: Reading?, ready: Bool) {
            self.proto = proto
            self.site = site
            self.body = body
            self.responder = responder
            self.reading = reading
            self.ready = ready
        }
    }

    /// Postbacks in arrival order; `first` is the sequence number of `entries[0]`.
    private struct Line: Sendable {
        var entries: [Queued] = []
        var first: UInt64 = 0
        /// Checks handed to the pool and not done yet.
        var checking = 0
        /// A pool thread has woken the loop and the loop has not drained since: no need to again.
        var wakeRequested = false

        var headIsReady: Bool { entries.first?.ready ?? false }
    }
    private let line = Locked(Line())
    /// One drain at a time, so that the line's order is the order of the ledger's decisions. It
    /// counts the drains: a `Locked<Void>`'s empty value shares its address with the mutex
    /// pointer, and ThreadSanitizer then takes the lock's own read for a race.
    private let draining = Locked(0)

    init(keyring: PostbackKeyring, ledger: PostbackLedger, servedSites: Set<String>, developmentMode: Bool,
         trustedProxies: [AddressRange], maxPostbackBytes: Int, store: ReportStore, rejections: RejectionLog,
         metrics: EndpointMetrics, clock: @escaping @Sendable () -> Timestamp,
         pool: WorkerPool? = WorkerPool.forOtherCores(named: "signature-check", priority: .background), sharedTurnBudget: Double = 0.001,
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
        self.pool = pool
        self.sharedTurnBudget = sharedTurnBudget
        self.ownTurnBudget = ownTurnBudget
        self.maxQueued = maxQueued
    }

    /// Finds the site and the size on arrival; reads the body here on a single core (answering a
    /// refusal at once), on a pool thread otherwise, with the signature.
    func handle(_ proto: AttributionProtocol, _ request: HTTPRequest, responder: HTTPResponder) {
        let site: String
        switch resolveSite(request) {
        case .success(let s): site = s
        case .failure(let problem): return refuse(problem, body: request.body, responder)
        }
        guard request.body.count <= maxPostbackBytes else {
            return refuse(Problem(status: 413, rule: "body_too_large",
                                  detail: "the body has \(request.body.count) bytes; postbacks are at most \(maxPostbackBytes)"),
                          body: request.body, responder)
        }
        guard let pool else {
            let reading = Self.read(proto, request.body)
            if case .refused(let problem) = reading { return refuse(problem, body: request.body, responder) }
            // A copy of a postback already stored needs no check: the loop will count it. (The
            // loop decides again when its turn comes; should it not be a retry then, it checks it
            // there.)
            let item = Queued(proto: proto, site: site, body: request.body, responder: responder,
                              reading: reading, ready: isKnownRetry(reading))
            _ = enqueue(item, responder: responder, checking: false)
            return
        }
        let item = Queued(proto: proto, site: site, body: request.body, responder: responder, reading: nil, ready: false)
        guard let sequence = enqueue(item, responder: responder, checking: true) else { return }
        let (keyring, line, ledger, body) = (self.keyring, self.line, self.ledger, request.body)
        pool.submit {
            let reading = Self.read(proto, body)
            var check: PostbackKeyring.Check?
            if case .postback(let postback, _) = reading, !Self.isKnownRetry(reading, in: ledger) {
                check = keyring.check(postback)
            }
            // While postbacks keep arriving, their requests turn the loop, which takes up what is
            // done in passing; a wake-up is needed only when the last check in flight is done, and
            // one per drain is enough. (Every extra turn would cost a flush of its own.)
            let wake = line.withLock { l -> Bool in
                let i = Int(sequence - l.first)
                l.entries[i].reading = reading
                l.entries[i].check = check
                l.entries[i].ready = true
                l.checking -= 1
                guard l.checking == 0, !l.wakeRequested else { return false }
                l.wakeRequested = true
                return true
            }
            if wake { responder.wakeLoop() }
        }
    }

    /// Puts `item` at the end of the line and returns its sequence number, or answers 503 when
    /// the line is full.
    private func enqueue(_ item: Queued, responder: HTTPResponder, checking: Bool) -> UInt64? {
        let sequence = line.withLock { l -> UInt64? in
            guard l.entries.count < maxQueued else { return nil }
            l.entries.append(item)
            if checking { l.checking += 1 }
            return l.first + UInt64(l.entries.count - 1)
        }
        if sequence == nil {
            responder.respond(Problem(status: 503, rule: "postbacks_backlogged",
                detail: "\(maxQueued) postbacks are waiting for their signature check; send this one again later").response)
        }
        return sequence
    }

    private static func read(_ proto: AttributionProtocol, _ body: [UInt8]) -> Reading {
        switch Postback.parse(body).flatMap({ json in Postback.read(proto, json: json).map { (json, $0) } }) {
        case .success(let (json, postback)): .postback(postback, contentHash: PostbackContent.fingerprint(json))
        case .failure(let problem): .refused(Problem(problem))
        }
    }

    private func isKnownRetry(_ reading: Reading) -> Bool { Self.isKnownRetry(reading, in: ledger) }

    private static func isKnownRetry(_ reading: Reading, in ledger: PostbackLedger) -> Bool {
        guard case .postback(let postback, let contentHash) = reading else { return false }
        return ledger.retry(duplicateKey: postback.duplicateKey, contentHash: contentHash) != nil
    }

    /// Whether the loop has postbacks to take up now.
    var hasReady: Bool {
        line.withLock { pool == nil ? !$0.entries.isEmpty : $0.headIsReady }
    }

    /// A turn's share of the line, before its commit: every postback whose check is done, or on a
    /// single core as many as the turn's budget allows, checked here.
    func drainForTurn() {
        drain(budget: pool != nil ? 0 : store.hasQueued ? sharedTurnBudget : ownTurnBudget)
    }

    /// Takes up postbacks in arrival order, queueing each one's record for the commit that
    /// follows: those whose check is done, and without a pool, others checked here for at most
    /// `budget` seconds (at least one).
    func drain(budget: Double) {
        draining.withLock { drains in
            drains += 1
            let start = DispatchTime.now().uptimeNanoseconds
            var checkedHere = 0
            while let item = line.withLock({ l -> Queued? in
                l.wakeRequested = false
                guard let head = l.entries.first else { return nil }
                if !head.ready {
                    guard pool == nil else { return nil }
                    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                    guard checkedHere == 0 || elapsed < budget else { return nil }
                    checkedHere += 1
                }
                l.first += 1
                return l.entries.removeFirst()
            }) {
                process(item)
            }
        }
    }

    /// Stops the pool once the HTTP server has stopped; postbacks still waiting were never
    /// answered, and their devices will send them again.
    func stop() {
        pool?.stop()
    }

    private func process(_ item: Queued) {
        let (store, ledger, metrics, proto, responder) = (self.store, self.ledger, self.metrics, item.proto, item.responder)
        let postback: Postback, contentHash: UInt64
        switch item.reading ?? Self.read(proto, item.body) {
        case .refused(let problem): return refuse(problem, body: item.body, responder)
        case .postback(let p, let hash): (postback, contentHash) = (p, hash)
        }
        let duplicateKey = postback.duplicateKey
        if let original = ledger.retry(duplicateKey: duplicateKey, contentHash: contentHash) {
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
        let check = item.check ?? keyring.check(postback)
        let verified = check.outcome.isVerified
        let claim = ledger.classify(duplicateKey: duplicateKey, contentHash: contentHash, verified: verified)
        let (verdict, reasons) = PostbackVerdict.judge(postback, signature: check, developmentMode: developmentMode,
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
        if let id { ledger.record(duplicateKey: duplicateKey, contentHash: contentHash, id: id, verified: verified) }
    }
}

extension PostbackIntake {
    private func resolveSite(_ request: HTTPRequest) -> Result<String, Problem> {
        ServedSite(sites: servedSites, developmentMode: developmentMode, trustedProxies: trustedProxies).resolve(request, what: "the postback")
    }

    private func refuse(_ problem: Problem, body: [UInt8], _ responder: HTTPResponder) {
        rejections.record(time: clock(), status: problem.status, rule: problem.rule, field: problem.field,
                          detail: problem.detail, body: body)
        responder.respond(problem.response)
    }

    /// `{"id":3,"verdict":"accepted","signature":"apple","reasons":[]}`, or for a retry
    /// `{"id":3,"retry":true}`. Devices read only the status; the body is for people testing.
    /// Written as bytes, like a report's: every postback is answered with one.
    static func acknowledgement(id: UInt64, retry: Bool, verdict: PostbackVerdict?, signature: SignatureOutcome?,
                                reasons: [String]) -> HTTPResponse {
        var json: [UInt8] = []
        json.reserveCapacity(96)
        json.append(ascii: #"{"id":"#)
        json.append(decimal: Int(id))
        if retry {
            json.append(ascii: #","retry":true"#)
        } else {
            json.append(ascii: #","verdict":""#)
            json.append(utf8: verdict?.name ?? "")
            json.append(ascii: #"","signature":""#)
            json.append(utf8: signature?.name ?? "")
            json.append(ascii: #"","reasons":["#)
            // Reasons are the endpoint's own snake_case words, which need no escaping.
            for (i, reason) in reasons.enumerated() {
                if i > 0 { json.append(UInt8(ascii: ",")) }
                json.append(UInt8(ascii: "\""))
                json.append(utf8: reason)
                json.append(UInt8(ascii: "\""))
            }
            json.append(UInt8(ascii: "]"))
        }
        json.append(ascii: "}\n")
        return HTTPResponse(status: 200, headers: JSONResponse.headers, body: json)
    }
}
