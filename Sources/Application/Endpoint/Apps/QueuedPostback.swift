import Locking
import Postbacks
import Primitives
import HTTPServer
import RecordLog

/// A postback taken in and waiting for the event loop: a reference, so that the queue moves
/// pointers, not a postback's fields, as it advances.
final class QueuedPostback: @unchecked Sendable {
    let proto: AttributionProtocol
    let site: String
    let body: [UInt8]
    /// As sent: kept with the postback, for the relays.
    let contentType: String?
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

    init(proto: AttributionProtocol, site: String, body: [UInt8], contentType: String?, responder: HTTPResponder,
         reading: PostbackReading?, ready: Bool) {
        self.proto = proto
        self.site = site
        self.body = body
        self.contentType = contentType
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
