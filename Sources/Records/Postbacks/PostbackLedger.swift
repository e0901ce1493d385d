import Locking
import RecordLog

/// Which postbacks the log holds, by duplicate key, and how many retries of each arrived: what
/// tells a device's repeated delivery from a new postback.
///
/// Memory holds the postbacks whose devices may still retry (nine times over at most nine days,
/// PROTOCOLS.md §3): a 16-byte hash of the key and the facts, about 48 bytes each with the index
/// (`DeliveryTable`), never the key's text. Once a sealed segment is older than the
/// window its postbacks are written to a key table (`PostbackArchive`) and let go of here; a
/// delivery that comes later still is found there (on a signature-check thread, or on the loop
/// when there are none) and counted as the retry it is. Replay puts back in memory only the
/// postbacks no table holds.
///
/// In memory two keys are the same when both 64-bit hashes are: a collision made on purpose can
/// only make a forgery count as a retry of what it collides with (a verified postback claims its
/// key only against verified ones). On disk every match is confirmed against the record.
///
/// A postback is claimed when it is queued, before it is on disk, so that a second delivery in
/// the same turn of the event loop is already known as a retry; a claim whose write fails is
/// released, and the next delivery is stored again.
public final class PostbackLedger: Sendable {
    private struct State: Sendable {
        /// Every postback in the window, by key and by id.
        var deliveries = DeliveryTable()
        /// The sites postbacks were sent to, numbered for `DeliveryTable.Delivery`.
        var sites: [String] = []
        var siteNumbers: [String: UInt16] = [:]
        /// Retries counted after their postback left memory (or after its table was written).
        var late: [UInt64: UInt32] = [:]
        /// Just after the last retry record counted: a table written now holds the retries up to here.
        var countedThrough = 0
        /// Deliveries that were retries of, or conflicts with, a postback found on disk.
        var foundOnDisk = 0
        /// Key tables that could not be read when asked (a lookup answered 503; a count read as none).
        var tableErrors = 0
        /// Releases that came before their record (a commit on another thread can fail a
        /// postback before its intake has noted it): the record is then not kept.
        var releasedEarly: [DuplicateKeyHash: [UInt64]] = [:]

        mutating func siteNumber(_ site: String) -> UInt16 {
            if let number = siteNumbers[site] { return number }
            guard sites.count < Int(DeliveryTable.siteLimit) else { return DeliveryTable.siteLimit }
            let number = UInt16(sites.count)
            sites.append(site)
            siteNumbers[site] = number
            return number
        }

        func origin(_ delivery: DeliveryTable.Delivery) -> PostbackOrigin {
            let site = delivery.site
            return PostbackOrigin(day: Int32(delivery.day), site: Int(site) < sites.count ? sites[Int(site)] : "")
        }

        /// The live delivery under `key` with `contentHash`, if any.
        func same(_ key: DuplicateKeyHash, contentHash: UInt64) -> DeliveryTable.Delivery? {
            deliveries.positions(of: key).lazy.map { deliveries[$0] }.first { $0.contentHash == contentHash }
        }
    }

    private let state = Locked(State())
    /// Deliveries with other content remembered under one key (`record`).
    public static let deliveriesPerKey = 16
    /// Where postbacks that left memory are found; nil keeps everything in memory (tests).
    public let archive: PostbackArchive?

    public init(archive: PostbackArchive? = nil) {
        self.archive = archive
    }

    /// What a new delivery is, given what was stored before it.
    public enum Claim: Sendable, Equatable {
        /// Never seen: store it.
        case new
        /// The same content as postback `id`, stored at `origin`: count it there, do not store it again.
        case retry(of: UInt64, origin: PostbackOrigin)
        /// The key of an earlier postback with other content: a new fact, stored and quarantined.
        case conflict
    }

    /// The postback in memory whose copy this is, if one with the same content is stored: a
    /// retry needs no signature check.
    public func retry(duplicateKey: String, contentHash: UInt64) -> (id: UInt64, origin: PostbackOrigin)? {
        let key = DuplicateKeyHash(duplicateKey)
        return state.withLock { s in s.same(key, contentHash: contentHash).map { ($0.id, s.origin($0)) } }
    }

    /// The deliveries memory holds under a key, with their content's fingerprints: what an
    /// inspection reports, counting nothing.
    public func known(duplicateKey: String) -> [(id: UInt64, contentHash: UInt64)] {
        let key = DuplicateKeyHash(duplicateKey)
        return state.withLock { s in s.deliveries.positions(of: key).map { (s.deliveries[$0].id, s.deliveries[$0].contentHash) } }
    }

    /// Where postback `id` was stored, while memory holds it.
    public func origin(of id: UInt64) -> PostbackOrigin? {
        state.withLock { s in s.deliveries.position(of: id).map { s.origin(s.deliveries[$0]) } }
    }

    /// What the key tables held under a key when it was looked up, and the archive's generation
    /// then (`PostbackArchive.generation`).
    public struct LookedUp: Sendable {
        public var generation: Int
        public var earlier: [PostbackArchive.Earlier]

        public init(generation: Int, earlier: [PostbackArchive.Earlier]) {
            self.generation = generation
            self.earlier = earlier
        }
    }

    /// What a delivery is, once its signature is checked, given the deliveries in memory and
    /// those on disk: `onDisk` when no table was added since it was looked up, else `lookUp()`'s,
    /// asked under the ledger's lock so that no postback leaves memory between the two. Only a
    /// verified delivery claims its key: a verified one conflicts only with an earlier verified
    /// one, so that a forgery (a zeroed signature, a guessed `postback-identifier` or
    /// `transaction-id`) stored first is quarantined alone and never erases the genuine
    /// postback. One that is not verified conflicts with any earlier delivery under its key.
    public func classify<Failure: Error>(duplicateKey: String, contentHash: UInt64, verified: Bool, onDisk: LookedUp?,
                                         lookUp: () throws(Failure) -> [PostbackArchive.Earlier]) throws(Failure) -> Claim {
        let key = DuplicateKeyHash(duplicateKey)
        return try state.withLock { s throws(Failure) -> Claim in
            let inMemory = s.deliveries.positions(of: key).map { s.deliveries[$0] }
            if let same = inMemory.first(where: { $0.contentHash == contentHash }) { return .retry(of: same.id, origin: s.origin(same)) }
            var disk: [PostbackArchive.Earlier] = []
            if let archive {
                if let onDisk, onDisk.generation == archive.generation { disk = onDisk.earlier } else { disk = try lookUp() }
            }
            if let same = disk.first(where: { $0.contentHash == contentHash }) {
                s.foundOnDisk += 1
                return .retry(of: same.id, origin: same.origin)
            }
            guard !inMemory.isEmpty || !disk.isEmpty else { return .new }
            if verified && !inMemory.contains(where: \.verified) && !disk.contains(where: \.verified) { return .new }
            if inMemory.isEmpty { s.foundOnDisk += 1 }
            return .conflict
        }
    }

    /// What a delivery is, given memory alone (a ledger without key tables).
    public func classify(duplicateKey: String, contentHash: UInt64, verified: Bool) -> Claim {
        classify(duplicateKey: duplicateKey, contentHash: contentHash, verified: verified, onDisk: nil, lookUp: { () throws(Never) in [] })
    }

    /// Notes a postback queued (or replayed) under `id`, stored at `origin`; ids rise.
    public func record(duplicateKey: String, contentHash: UInt64, id: UInt64, verified: Bool, origin: PostbackOrigin) {
        record(key: DuplicateKeyHash(duplicateKey), contentHash: contentHash, id: id, verified: verified, origin: origin)
    }

    func record(key: DuplicateKeyHash, contentHash: UInt64, id: UInt64, verified: Bool, origin: PostbackOrigin) {
        state.withLock { s in
            if let early = s.releasedEarly[key], let i = early.firstIndex(of: contentHash) {
                s.releasedEarly[key]!.remove(at: i)
                if s.releasedEarly[key]!.isEmpty { s.releasedEarly[key] = nil }
                return
            }
            // A device's copies share their content, so many contents under one key are forgeries:
            // stored and quarantined, but past this many not remembered, so that a flood of them
            // cannot lengthen the index's probes for every other key.
            guard s.deliveries.positions(of: key).count < Self.deliveriesPerKey else { return }
            let site = s.siteNumber(origin.site)
            s.deliveries.append(DeliveryTable.Delivery(key: key, id: id, contentHash: contentHash, verified: verified,
                                                       day: origin.day, site: site))
        }
    }

    /// Forgets a postback whose write failed: it was never stored. Its content is unique under
    /// its key (a second copy would have been a retry), so key and content name it.
    public func release(duplicateKey: String, contentHash: UInt64) {
        let key = DuplicateKeyHash(duplicateKey)
        state.withLock { s in
            if let index = s.deliveries.positions(of: key).first(where: { s.deliveries[$0].contentHash == contentHash }) {
                s.deliveries.remove(at: index)
            } else {
                s.releasedEarly[key, default: []].append(contentHash)
            }
        }
    }

    /// Counts a retry of postback `id` once its record, ending at `end`, is on disk (or replayed).
    public func countRetry(of id: UInt64, end: Int) {
        state.withLock { s in
            Self.count(&s, retryOf: id)
            s.countedThrough = max(s.countedThrough, end)
        }
    }

    private static func count(_ s: inout State, retryOf id: UInt64) {
        if let index = s.deliveries.position(of: id) {
            s.deliveries[index].retries &+= 1
            return
        }
        s.late[id, default: 0] &+= 1
    }

    /// Retries of postback `id`: from memory, or its table and what came after it.
    public func retries(of id: UInt64) -> Int {
        var reader = RetryReader(ledger: self)
        return reader.retries(of: id)
    }

    /// Reads retry counts for many postbacks in id order (an export, a summary): a table's
    /// counts are read a block at a time.
    public struct RetryReader {
        let ledger: PostbackLedger
        private var block: (ids: Range<UInt64>, counts: [UInt32])?

        public init(ledger: PostbackLedger) {
            self.ledger = ledger
        }

        public mutating func retries(of id: UInt64) -> Int {
            let (inMemory, late) = ledger.state.withLock { s -> (UInt32?, UInt32) in
                let memory = s.deliveries.position(of: id).map { s.deliveries[$0].retries }
                return (memory, s.late[id] ?? 0)
            }
            if let inMemory { return Int(inMemory) + Int(late) }
            if let block, block.ids.contains(id) { return Int(block.counts[Int(id - block.ids.lowerBound)]) + Int(late) }
            guard let table = ledger.archive?.table(covering: id) else { return Int(late) }
            // A count block that cannot be read counts none (`attribution_postback_key_table_errors_total`).
            guard let read = try? table.retryBlock(holding: id), read.ids.contains(id) else {
                ledger.state.withLock { $0.tableErrors += 1 }
                return Int(late)
            }
            block = read
            return Int(read.counts[Int(id - read.ids.lowerBound)]) + Int(late)
        }
    }

    /// Postbacks in memory: what the window holds.
    public var keysInMemory: Int { state.withLock { $0.deliveries.live } }
    /// Bytes the window's postbacks take in memory.
    public var bytesInMemory: Int { state.withLock { $0.deliveries.bytes } }
    /// Postbacks with retries counted after they left memory.
    public var lateRetried: Int { state.withLock { $0.late.count } }
    /// Deliveries told apart by a postback found on disk: retries and conflicts after the window.
    public var foundOnDisk: Int { state.withLock { $0.foundOnDisk } }
    /// Key tables that could not be read when asked.
    public var tableErrors: Int { state.withLock { $0.tableErrors } }

    /// Counts a table that could not be read for a lookup.
    public func noteTableError() {
        state.withLock { $0.tableErrors += 1 }
    }

    /// Lets go of the late retries of postbacks whose segments retention removed.
    public func forgetLate(below id: UInt64) {
        state.withLock { s in
            for key in s.late.keys where key < id { s.late[key] = nil }
        }
    }

    /// Takes one record of the log as replay shows it. A postback a table holds stays on disk;
    /// a retry a table counted is passed over.
    public func take(_ view: RecordLog.RecordView) {
        if view.kind == RecordKind.postback.number {
            if archive?.table(covering: view.id) != nil { return }
            guard let stored = StoredPostback.decode(view) else { return }
            takePostback(id: stored.id, key: DuplicateKeyHash(stored.draft.duplicateKey), contentHash: stored.draft.contentHash,
                         verified: stored.draft.signature.isVerified, origin: PostbackOrigin(receivedAt: stored.receivedAt, site: stored.draft.site))
        } else if view.kind == RecordKind.postbackRetry.number, view.payload.count >= 8 {
            takeRetry(of: view.payload.loadLE(UInt64.self, at: 0), end: view.end)
        }
    }

    func takePostback(id: UInt64, key: DuplicateKeyHash, contentHash: UInt64, verified: Bool, origin: PostbackOrigin) {
        if archive?.table(covering: id) != nil { return }
        record(key: key, contentHash: contentHash, id: id, verified: verified, origin: origin)
    }

    func takeRetry(of original: UInt64, end: Int) {
        if let table = archive?.table(covering: original), end <= table.retriesThrough { return }
        countRetry(of: original, end: end)
    }

    // MARK: - Leaving memory

    /// The retry counts of the postbacks `ids` (those that have any) and how far into the log
    /// they go: what a key table written now holds.
    public func retrySnapshot(of ids: Range<UInt64>) -> (counts: [UInt64: UInt32], through: Int) {
        state.withLock { s in
            var counts: [UInt64: UInt32] = [:]
            var i = s.deliveries.firstPosition(atLeast: ids.lowerBound)
            while i < s.deliveries.end, s.deliveries[i].id < ids.upperBound {
                let delivery = s.deliveries[i]
                if !delivery.isGone, delivery.retries > 0 { counts[delivery.id] = delivery.retries }
                i += 1
            }
            // Whichever is smaller: the segment's ids, or the late retries.
            if s.late.count < ids.count {
                for (id, late) in s.late where ids.contains(id) { counts[id, default: 0] &+= late }
            } else {
                for id in ids { if let late = s.late[id] { counts[id, default: 0] &+= late } }
            }
            return (counts, s.countedThrough)
        }
    }

    /// Hands the postbacks up to id `through` to `table`, written from `snapshot`: they leave
    /// memory, and retries counted since the snapshot stay counted, as late ones (the table's
    /// `retriesThrough` tells replay the same).
    public func adopt(_ table: PostbackKeyTable, snapshot: [UInt64: UInt32], through: UInt64?) {
        state.withLock { s in
            archive?.add(table)
            if let through {
                var late = s.late
                s.late = [:]
                s.deliveries.leave(through: through) { gone in
                    if gone.retries > 0 { late[gone.id, default: 0] &+= gone.retries }
                }
                s.late = late
                // Only ids with a count can have a late one to keep.
                for (id, counted) in snapshot {
                    guard let late = s.late[id] else { continue }
                    let since = late &- min(late, counted)
                    s.late[id] = since > 0 ? since : nil
                }
            }
        }
    }
}
