import Locking
import Postbacks
import Primitives
import HTTPServer
import RecordLog

/// A postback taken in and waiting for the event loop: a reference, so that the line moves
/// pointers, not a postback's fields, as it advances.
final class QueuedPostback: @unchecked Sendable {
    let proto: AttributionProtocol
    let site: String
    let body: [UInt8]
    let responder: HTTPResponder
    /// What reading the body gave: set on arrival on the loop, or by a worker thread.
    var reading: PostbackReading?
    /// The signature's outcome, once a worker thread has checked it.
    var check: PostbackKeyring.Check?
    /// What the key tables hold under its key, looked up by the worker thread that checked it.
    var onDisk: PostbackLedger.LookedUp?
    /// Ready for the loop: read and checked, or a copy of a stored postback that needs no check.
    /// These three are read and written under the line's lock only.
    var ready: Bool

    init(proto: AttributionProtocol, site: String, body: [UInt8], responder: HTTPResponder, reading: PostbackReading?, ready: Bool) {
        self.proto = proto
        self.site = site
        self.body = body
        self.responder = responder
        self.reading = reading
        self.ready = ready
    }
}

extension PostbackLedger.LookedUp {
    /// What a worker thread looks up before the loop classifies: nothing for a copy memory knows,
    /// else the key tables' postbacks under the key, with the archive's generation read before
    /// memory was asked. Nil when there are no tables or one could not be read: the loop then
    /// looks again itself.
    static func lookUp(_ reading: PostbackReading, ledger: PostbackLedger, store: RecordLog) -> PostbackLedger.LookedUp? {
        guard let archive = ledger.archive, case .postback(let postback, _) = reading else { return nil }
        let generation = archive.generation
        guard !reading.isKnownRetry(in: ledger) else { return nil }
        let key = postback.duplicateKey
        guard let earlier = try? archive.earlier(duplicateKey: key, hash: DuplicateKeyHash(key), in: store) else { return nil }
        return PostbackLedger.LookedUp(generation: generation, earlier: earlier)
    }
}

/// What reading a body gave: a postback and its content's fingerprint, or the refusal of a body
/// that cannot be one.
enum PostbackReading: Sendable {
    case postback(Postback, contentHash: UInt64)
    case refused(Problem)

    init(_ proto: AttributionProtocol, _ body: [UInt8]) {
        switch Postback.parse(body).flatMap({ json in Postback.read(proto, json: json).map { (json, $0) } }) {
        case .success(let (json, postback)): self = .postback(postback, contentHash: PostbackContent.fingerprint(json))
        case .failure(let problem): self = .refused(Problem(problem))
        }
    }

    /// A copy of a postback already stored: counted, never checked again.
    func isKnownRetry(in ledger: PostbackLedger) -> Bool {
        guard case .postback(let postback, let contentHash) = self else { return false }
        return ledger.retry(duplicateKey: postback.duplicateKey, contentHash: contentHash) != nil
    }
}

/// Postbacks in arrival order, at most `capacity`, shared by the threads that check them and the
/// loop that takes them up: what ends a postback happens in this order, which keeps two copies of
/// one postback in the order they came.
final class PostbackLine: Sendable {
    let capacity: Int
    private struct Entries {
        var entries: [QueuedPostback] = []
        /// The sequence number of `entries[0]`.
        var first: UInt64 = 0
        /// Checks handed to worker threads and not done yet.
        var checking = 0
        /// A worker has asked for a turn and the loop has not drained since: no need to again.
        var turnRequested = false
    }
    private let state = Locked(Entries())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Puts `item` at the end; its sequence number, or nil when the line is full.
    func append(_ item: QueuedPostback, checking: Bool) -> UInt64? {
        state.withLock { l -> UInt64? in
            guard l.entries.count < capacity else { return nil }
            l.entries.append(item)
            if checking { l.checking += 1 }
            return l.first + UInt64(l.entries.count - 1)
        }
    }

    /// A worker is done with `sequence`; true when the loop should be asked for a turn: the last
    /// check in flight is done, and none has asked since the last drain. (While postbacks keep
    /// arriving their requests turn the loop, which takes up what is done in passing; every
    /// extra turn would cost a flush of its own.)
    func checked(_ sequence: UInt64, reading: PostbackReading, check: PostbackKeyring.Check?, onDisk: PostbackLedger.LookedUp?) -> Bool {
        state.withLock { l -> Bool in
            let item = l.entries[Int(sequence - l.first)]
            item.reading = reading
            item.check = check
            item.onDisk = onDisk
            item.ready = true
            l.checking -= 1
            guard l.checking == 0, !l.turnRequested else { return false }
            l.turnRequested = true
            return true
        }
    }

    /// The first postback, taken off the line if `take` says so from whether it is ready.
    func takeFirst(_ take: (_ ready: Bool) -> Bool) -> QueuedPostback? {
        state.withLock { l -> QueuedPostback? in
            l.turnRequested = false
            guard let head = l.entries.first, take(head.ready) else { return nil }
            l.first += 1
            return l.entries.removeFirst()
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }
    var firstIsReady: Bool { state.withLock { $0.entries.first?.ready ?? false } }
}
