import Locking
import Postbacks
import Primitives
import HTTPServer
import RecordLog

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
