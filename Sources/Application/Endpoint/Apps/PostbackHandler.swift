import HTTPServer
import Postbacks
import Primitives
import RecordLog

/// The postback paths: from a POST to a stored postback (or a counted retry) and its 200.
///
/// Devices resend anything but a 200 up to nine times, so the answer is 200 only once the
/// postback, or the record of its retry, is on disk (`AnswerOnCommit`); a refusal is kept for
/// bodies that can never be a postback, so that nothing true is turned away.
///
/// A postback waits in a line while its body is read and its signature checked (`PostbackChecks`:
/// on worker threads, or on the loop within a budget); what ends it (telling a retry from a new
/// postback, the verdict, the append, or a refusal) happens on the event loop at the end of a
/// turn, in arrival order. A copy of a postback already stored is not checked at all. Past the
/// line's capacity the answer is 503 with Retry-After, and devices retry.
struct PostbackHandler: Sendable {
    let checks: any PostbackChecks
    let keyring: PostbackKeyring
    let ledger: PostbackLedger
    /// The Apps view's counts, kept as postbacks and retries are stored.
    let aggregates: AppsAggregates
    /// Until the ledger is whole after a start that read it again, postbacks wait (503).
    let rebuild: PostbackRebuild
    let developmentMode: Bool
    let maxPostbackBytes: Int
    let store: RecordLog
    let context: HandlerContext
    /// Where a copy signed with one of Apple's development keys is noted for the setup view.
    var development: DevelopmentPostbacks? = nil

    /// Finds the site and the size on arrival; the rest is the checks' and the turn's.
    func handle(_ proto: AttributionProtocol, _ request: HTTPRequest, responder: HTTPResponder) throws {
        let site = try context.servedSite(of: request, what: "the postback")
        context.arrived(proto == .skadnetwork ? .skadnetwork : .adattributionkit, at: site)
        try rebuild.requireReady("a postback")
        guard request.body.count <= maxPostbackBytes else {
            throw Problem(status: 413, rule: "body_too_large",
                          detail: "the body has \(request.body.count) bytes; postbacks are at most \(maxPostbackBytes)")
        }
        try checks.enqueue(proto, site: site, request, responder: responder)
    }

    /// Whether the loop has postbacks to take up now.
    var hasReady: Bool { checks.hasReady }

    /// A turn's share of the line, before its commit: each postback taken up queues its record.
    func drainForTurn() {
        checks.drainForTurn(storeHasQueued: store.hasQueued) { process($0) }
    }

    /// Stops the checks once the HTTP server has stopped; postbacks still waiting were never
    /// answered, and their devices will send them again.
    func stop() {
        checks.stop()
    }

    private func process(_ item: QueuedPostback) {
        let (ledger, metrics, aggregates, proto, responder) = (self.ledger, context.metrics, self.aggregates, item.proto, item.responder)
        let arrivals = context.arrivals
        let postback: Postback, contentHash: UInt64
        switch item.reading ?? PostbackReading(proto, item.body) {
        case .refused(let problem): return context.refuse(problem, site: item.site, body: item.body, responder: responder)
        case .postback(let p, let hash): (postback, contentHash) = (p, hash)
        }
        let duplicateKey = postback.duplicateKey
        if let original = ledger.retry(duplicateKey: duplicateKey, contentHash: contentHash) {
            return storeRetry(of: original.id, at: original.origin, proto, site: item.site, responder: responder)
        }
        let check = item.check ?? keyring.check(postback)
        let verified = check.outcome.isVerified
        let claim: PostbackLedger.Claim
        do {
            claim = try ledger.classify(duplicateKey: duplicateKey, contentHash: contentHash, verified: verified, onDisk: item.onDisk,
                                        lookUp: { () throws(PostbackKeyTable.Unreadable) in try lookUpOnDisk(duplicateKey) })
        } catch {
            // The postback may be in the table that could not be read: not stored, so that it is
            // never counted twice; the device sends it again.
            ledger.noteTableError()
            EventLog.write("postback_key_table_unreadable", ["path": .string(error.path)])
            return responder.respond(Problem(status: 503, rule: "postback_keys_unreadable",
                                             detail: "this endpoint cannot read its record of earlier postbacks right now; send this one again later").response)
        }
        // A copy of a postback that has left memory: found in its segment's key table.
        if case .retry(let original, let origin) = claim { return storeRetry(of: original, at: origin, proto, site: item.site, responder: responder) }
        let (verdict, reasons) = PostbackVerdict.judge(postback, signature: check, developmentMode: developmentMode,
                                                       conflictsWithEarlier: claim == .conflict)
        let draft = StoredPostback.Draft(protocol: proto, site: item.site, verdict: verdict, reasons: reasons,
                                         signature: check.outcome, keyName: check.keyName,
                                         duplicateKey: duplicateKey, contentHash: contentHash, body: item.body,
                                         contentType: item.contentType)
        let answer = AnswerOnCommit(responder: responder, metrics: metrics, failure: "the postback")
        let queued = store.appendPostback(draft, steps: answer.steps(
            answer: { record in
                Self.acknowledgement(id: record.id, retry: false, verdict: verdict, signature: check.outcome, reasons: reasons)
            },
            stored: { record in
                let stored = StoredPostback(id: record.id, receivedAt: record.time, draft: draft)
                let app = aggregates.add(stored)
                metrics.postbackStored(stored)
                // An app's last copy is one that was accepted (its signature checked): no stranger
                // can clear an app's silence, or fill the book with app ids. (Its site's arrival
                // was noted when it came.)
                let path: Arrivals.Path = proto == .skadnetwork ? .skadnetwork : .adattributionkit
                if verdict == .accepted {
                    context.accepted(path, at: item.site, time: record.time)
                    if let app { arrivals?.received(path, app: app, at: record.time) }
                }
                // Stored as before, and shown on the setup view too: what a developer is waiting for.
                if check.outcome == .appleDevelopment, let development {
                    development.note(proto, body: item.body, at: record.time, signature: check.outcome)
                }
            },
            // Never stored, so the device's next delivery must be stored, not counted.
            undo: { ledger.release(duplicateKey: duplicateKey, contentHash: contentHash) }))
        if let queued {
            ledger.record(duplicateKey: duplicateKey, contentHash: contentHash, id: queued.id, verified: verified, origin: queued.origin)
        }
    }

    /// A device's copy of postback `original`, stored at `origin`: only counted (there), and
    /// answered like the first.
    private func storeRetry(of original: UInt64, at origin: PostbackOrigin, _ proto: AttributionProtocol, site: String, responder: HTTPResponder) {
        let (ledger, metrics, aggregates) = (self.ledger, context.metrics, self.aggregates)
        let answer = AnswerOnCommit(responder: responder, metrics: metrics, failure: "the postback's retry")
        store.appendRetry(of: original, protocol: proto, site: site, origin: origin, steps: answer.steps(
            answer: { _ in Self.acknowledgement(id: original, retry: true, verdict: nil, signature: nil, reasons: []) },
            stored: { record in
                ledger.countRetry(of: original, end: record.recordEnd)
                aggregates.addDuplicate(at: origin)
                metrics.postbackRetried(proto)
            }))
    }

    /// The postbacks the key tables hold under the key, read on the loop: when there was no
    /// worker, or a table was added since it looked.
    private func lookUpOnDisk(_ duplicateKey: String) throws(PostbackKeyTable.Unreadable) -> [PostbackArchive.Earlier] {
        guard let archive = ledger.archive else { return [] }
        return try archive.earlier(duplicateKey: duplicateKey, hash: DuplicateKeyHash(duplicateKey), in: store)
    }
}

extension PostbackHandler {
    /// `{"id":3,"verdict":"accepted","signature":"apple","reasons":[]}`, or for a retry
    /// `{"id":3,"retry":true}`. Devices read only the status; the body is for people testing.
    static func acknowledgement(id: UInt64, retry: Bool, verdict: PostbackVerdict?, signature: SignatureOutcome?,
                                reasons: [String]) -> HTTPResponse {
        var ack = Acknowledgement(id: id)
        if retry {
            ack.append(#","retry":true"#)
        } else {
            ack.append(name: #","verdict":""#, word: verdict?.name ?? "")
            ack.append(name: #","signature":""#, word: signature?.name ?? "")
            ack.appendReasons(reasons)
        }
        return ack.response(status: 200)
    }
}
