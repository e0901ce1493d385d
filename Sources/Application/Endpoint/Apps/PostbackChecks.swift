import Dispatch
import HTTPServer
import Postbacks
import Primitives
import RecordLog

/// How a postback's body is read and its signature checked before the event loop takes it up:
/// on worker threads (`PostbackChecksOnWorkers`), or on the loop itself within a time budget
/// (`PostbackChecksOnTheLoop`). Checking a signature takes about 100 µs, and reading a body about
/// 15, far more than a report's whole path, so where that happens decides what a burst of
/// postbacks costs the reports that share the loop.
protocol PostbackChecks: Sendable {
    var queue: PostbackQueue { get }
    /// Puts a postback whose site and size are fine in the queue; throws the refusal of a body that
    /// cannot be one when it is read here. A full queue answers 503 itself: that is no refusal of
    /// the postback, and is not kept in the rejection ring.
    func enqueue(_ proto: AttributionProtocol, site: String, _ request: HTTPRequest, responder: HTTPResponder) throws
    /// The postbacks this turn takes up, in arrival order; `storeHasQueued` says whether reports
    /// or triggers wait for the same commit.
    func drainForTurn(storeHasQueued: Bool, _ take: (QueuedPostback) -> Void)
    /// Whether the loop has postbacks to take up now.
    var hasReady: Bool { get }
    func stop()
}

extension PostbackChecks {
    static func backlogged(_ capacity: Int) -> Problem {
        Problem(status: 503, rule: "postbacks_backlogged",
                detail: "\(capacity) postbacks are waiting for their signature check; send this one again later")
    }
}

/// With more than one core: `WorkerPool` threads (`signature-check-N`) on the other cores read
/// the body and check the signature, and the loop takes up every postback they are done with, a
/// few microseconds each. The loop itself only finds the site and the size.
struct PostbackChecksOnWorkers: PostbackChecks {
    let queue: PostbackQueue
    /// `signature-check-N`, at nice 19: the loop takes its core back the moment it wakes.
    let pool: WorkerPool
    let keyring: PostbackKeyring
    /// Consulted first, so that a copy of a stored postback is never checked again.
    let ledger: PostbackLedger
    /// Where a postback found in the key tables is read back, off the loop.
    let store: RecordLog
    /// Asked when the last check in flight is done, so that the loop takes it up without
    /// waiting for another request.
    let turns: TurnRequester

    func enqueue(_ proto: AttributionProtocol, site: String, _ request: HTTPRequest, responder: HTTPResponder) throws {
        let item = QueuedPostback(proto: proto, site: site, body: request.body, contentType: request.headers["Content-Type"],
                                  responder: responder, reading: nil, ready: false)
        guard let sequence = queue.append(item, checking: true) else {
            return responder.respond(Self.backlogged(queue.capacity).response)
        }
        let (keyring, queue, ledger, store, turns, body) = (self.keyring, self.queue, self.ledger, self.store, self.turns, request.body)
        pool.submit {
            let reading = PostbackReading(proto, body)
            let onDisk = PostbackLedger.LookedUp.lookUp(reading, ledger: ledger, store: store)
            var check: PostbackKeyring.Check?
            if case .postback(let postback, _) = reading, !reading.isKnownRetry(in: ledger) {
                check = keyring.check(postback)
            }
            if queue.checked(sequence, reading: reading, check: check, onDisk: onDisk) { turns.request() }
        }
    }

    /// Every postback whose check is done, up to the first that is not.
    func drainForTurn(storeHasQueued: Bool, _ take: (QueuedPostback) -> Void) {
        while let item = queue.takeFirst({ $0 }) { take(item) }
    }

    var hasReady: Bool { queue.firstIsReady }

    func stop() { pool.stop() }
}

/// On a single core: the loop reads the body on arrival, refusing at once what cannot be a
/// postback, and checks signatures at the end of a turn, for at most `sharedTurnBudget` seconds
/// when reports or triggers wait for the same commit and `ownTurnBudget` when none do, so that a
/// burst spreads over turns instead of holding up the reports that share one.
struct PostbackChecksOnTheLoop: PostbackChecks {
    let queue: PostbackQueue
    let ledger: PostbackLedger
    var sharedTurnBudget = 0.001
    var ownTurnBudget = 0.008

    func enqueue(_ proto: AttributionProtocol, site: String, _ request: HTTPRequest, responder: HTTPResponder) throws {
        let reading = PostbackReading(proto, request.body)
        if case .refused(let problem) = reading { throw problem }
        // A copy of a postback already stored needs no check: the loop will count it. (The loop
        // decides again when its turn comes; should it not be a retry then, it checks it there.)
        let item = QueuedPostback(proto: proto, site: site, body: request.body, contentType: request.headers["Content-Type"],
                                  responder: responder, reading: reading, ready: reading.isKnownRetry(in: ledger))
        guard queue.append(item, checking: false) != nil else {
            return responder.respond(Self.backlogged(queue.capacity).response)
        }
    }

    /// As many as the turn's budget allows (at least one), each checked as it is taken up.
    func drainForTurn(storeHasQueued: Bool, _ take: (QueuedPostback) -> Void) {
        let budget = storeHasQueued ? sharedTurnBudget : ownTurnBudget
        let start = DispatchTime.now().uptimeNanoseconds
        var checkedHere = 0
        while let item = queue.takeFirst({ ready in
            if ready { return true }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            guard checkedHere == 0 || elapsed < budget else { return false }
            checkedHere += 1
            return true
        }) {
            take(item)
        }
    }

    var hasReady: Bool { !queue.isEmpty }

    func stop() {}
}
