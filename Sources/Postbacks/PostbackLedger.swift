import Locking
import ReportStore

/// Which postbacks the log holds, by duplicate key, and how many retries of each arrived: what
/// tells a device's repeated delivery from a new postback. Rebuilt from the log on every start.
///
/// A postback is claimed when it is queued, before it is on disk, so that a second delivery in
/// the same turn of the event loop is already known as a retry; a claim whose write fails is
/// released, and the next delivery is stored again.
public final class PostbackLedger: Sendable {
    private struct Delivery: Sendable {
        var id: UInt64
        var contentHash: UInt64
        /// Its signature verified with a key this endpoint trusts.
        var verified: Bool
    }

    private struct State: Sendable {
        var deliveries: [String: [Delivery]] = [:]
        var retries: [UInt64: Int] = [:]
        var retriesTotal = 0
        /// Releases that came before their record (a commit on another thread can fail a
        /// postback before its intake has noted it): the record is then not kept.
        var releasedEarly: [String: [UInt64]] = [:]
    }

    private let state = Locked(State())

    public init() {}

    /// What a new delivery is, given what was stored before it.
    public enum Claim: Sendable, Equatable {
        /// Never seen: store it.
        case new
        /// The same content as postback `id`: count it, do not store it again.
        case retry(of: UInt64)
        /// The key of an earlier postback with other content: a new fact, stored and quarantined.
        case conflict
    }

    /// The postback whose copy this is, if one with the same content is stored: a retry needs
    /// no signature check.
    public func retry(duplicateKey: String, contentHash: UInt64) -> UInt64? {
        state.withLock { s in s.deliveries[duplicateKey]?.first(where: { $0.contentHash == contentHash })?.id }
    }

    /// What a delivery is, once its signature is checked. Only a verified delivery claims its
    /// key: a verified one conflicts only with an earlier verified one, so that a forgery (a
    /// zeroed signature, a guessed `postback-identifier` or `transaction-id`) stored first is
    /// quarantined alone and never erases the genuine postback. One that is not verified
    /// conflicts with any earlier delivery under its key.
    public func classify(duplicateKey: String, contentHash: UInt64, verified: Bool) -> Claim {
        state.withLock { s in
            guard let earlier = s.deliveries[duplicateKey] else { return .new }
            if let same = earlier.first(where: { $0.contentHash == contentHash }) { return .retry(of: same.id) }
            if verified && !earlier.contains(where: \.verified) { return .new }
            return .conflict
        }
    }

    /// Notes a postback queued (or replayed) under `id`.
    public func record(duplicateKey: String, contentHash: UInt64, id: UInt64, verified: Bool) {
        state.withLock { s in
            if let early = s.releasedEarly[duplicateKey], let i = early.firstIndex(of: contentHash) {
                s.releasedEarly[duplicateKey]!.remove(at: i)
                if s.releasedEarly[duplicateKey]!.isEmpty { s.releasedEarly[duplicateKey] = nil }
                return
            }
            s.deliveries[duplicateKey, default: []].append(Delivery(id: id, contentHash: contentHash, verified: verified))
        }
    }

    /// Forgets a postback whose write failed: it was never stored. Its content is unique under
    /// its key (a second copy would have been a retry), so key and content name it.
    public func release(duplicateKey: String, contentHash: UInt64) {
        state.withLock { s in
            guard let i = s.deliveries[duplicateKey]?.firstIndex(where: { $0.contentHash == contentHash }) else {
                s.releasedEarly[duplicateKey, default: []].append(contentHash)
                return
            }
            s.deliveries[duplicateKey]!.remove(at: i)
            if s.deliveries[duplicateKey]!.isEmpty { s.deliveries[duplicateKey] = nil }
        }
    }

    /// Counts a retry of postback `id` (once it is on disk, or when replayed).
    public func countRetry(of id: UInt64) {
        state.withLock { s in
            s.retries[id, default: 0] += 1
            s.retriesTotal += 1
        }
    }

    public func retries(of id: UInt64) -> Int {
        state.withLock { $0.retries[id] ?? 0 }
    }

    public var retriesTotal: Int { state.withLock { $0.retriesTotal } }

    /// Takes one record of the log as replay shows it.
    public func take(_ view: ReportStore.RecordView) {
        if view.kind == RecordKind.postback.number, let stored = StoredPostback.decode(view) {
            record(duplicateKey: stored.draft.duplicateKey, contentHash: stored.draft.contentHash, id: stored.id,
                   verified: stored.draft.signature.isVerified)
        } else if view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 {
            countRetry(of: view.payload.loadLE(UInt64.self, at: 0))
        }
    }
}
