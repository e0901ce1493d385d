import Foundation
import Locking
import RecordLog

/// The key tables of the segments whose postbacks the ledger has let go of (`PostbackKeyTable`,
/// in `postback-keys/`): where a delivery that comes after its postback's window is found, and
/// where those postbacks' retry counts are read. Derived from the log: deleting the folder makes
/// the next start keep those postbacks in memory again until the tables are written anew.
public final class PostbackArchive: Sendable {
    public let directory: String
    private struct State {
        /// By segment, oldest first; their id ranges do not overlap and rise.
        var tables: [PostbackKeyTable] = [] {
            didSet { holdingIDs = tables.filter { $0.ids > 0 } }
        }
        /// Those with postbacks, for finding one by id.
        var holdingIDs: [PostbackKeyTable] = []
        /// Moves on with every table added, so that a lookup made before one can be told stale.
        var generation = 0
    }
    private let state = Locked(State())

    /// Loads every whole table in `directory`; a file that is not one is removed (it is rebuilt),
    /// and its path returned in `discarded`.
    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var tables: [PostbackKeyTable] = [], discarded: [String] = []
        for name in (try FileManager.default.contentsOfDirectory(atPath: directory)).sorted() {
            let path = directory + "/" + name
            guard name.hasSuffix(".keys"), let table = PostbackKeyTable.open(path: path) else {
                discarded.append(path)
                continue
            }
            tables.append(table)
        }
        tables.sort { $0.segmentBase < $1.segmentBase }
        // Two tables over one id range (a copied folder, a file named by hand) cannot both be true.
        var kept: [PostbackKeyTable] = []
        var idsEnd: UInt64 = 0
        for table in tables {
            if let last = kept.last, table.segmentBase < last.segmentEnd || (table.ids > 0 && table.firstID < idsEnd) {
                discarded.append(table.path)
                continue
            }
            kept.append(table)
            if table.ids > 0 { idsEnd = table.firstID + UInt64(table.ids) }
        }
        for path in discarded { unlink(path) }
        self.discarded = discarded
        state.withLock { $0.tables = kept }
    }

    /// Files found at start that were not whole tables, now removed.
    public let discarded: [String]

    public var tables: [PostbackKeyTable] { state.withLock { $0.tables } }
    public var generation: Int { state.withLock { $0.generation } }

    public func path(segmentBase base: Int) -> String { directory + "/" + String(base) + ".keys" }

    /// The table holding postback `id`.
    public func table(covering id: UInt64) -> PostbackKeyTable? {
        state.withLock { s in
            var low = 0, high = s.holdingIDs.count
            while low < high {
                let mid = (low + high) / 2
                let t = s.holdingIDs[mid]
                if t.covers(id: id) { return t }
                if t.firstID + UInt64(t.ids) <= id { low = mid + 1 } else { high = mid }
            }
            return nil
        }
    }

    public func hasTable(forSegment base: Int) -> Bool { state.withLock { $0.tables.contains { $0.segmentBase == base } } }

    func add(_ table: PostbackKeyTable) {
        state.withLock { s in
            s.tables.append(table)
            s.tables.sort { $0.segmentBase < $1.segmentBase }
            s.generation += 1
        }
    }

    /// Whether every table is of a segment of this log (`segments`, the store's, oldest first), or
    /// of one removed before it, and counted retries no further than the log goes: a table
    /// written for another log (a restored `log/` beside newer tables) cannot be trusted.
    public func describes(_ segments: [RecordLog.Segment]) -> Bool {
        let firstKept = segments.first?.base ?? 0, logEnd = segments.last?.end ?? 0
        return tables.allSatisfy { table in
            table.retriesThrough <= logEnd
                && (table.segmentEnd <= firstKept
                    || segments.contains { $0.sealed && $0.base == table.segmentBase && $0.end == table.segmentEnd })
        }
    }

    /// Forgets and deletes the tables of segments that end at or before `offset` (retention
    /// removed them: their records are gone, so nothing is left to find).
    public func removeTables(endingBy offset: Int) {
        let gone = state.withLock { s -> [PostbackKeyTable] in
            let gone = s.tables.filter { $0.segmentEnd <= offset }
            s.tables.removeAll { $0.segmentEnd <= offset }
            return gone
        }
        for table in gone { unlink(table.path) }
    }

    /// Deletes every table: they describe another log than the one opened.
    public func removeAll() {
        let gone = state.withLock { s -> [PostbackKeyTable] in
            defer { s.tables = []; s.generation += 1 }
            return s.tables
        }
        for table in gone { unlink(table.path) }
    }

    /// An earlier postback found on disk under a duplicate key.
    public struct Earlier: Sendable, Equatable {
        public var id: UInt64
        public var contentHash: UInt64
        public var verified: Bool
        public var origin: PostbackOrigin
    }

    /// The postbacks stored under `duplicateKey` in the tabled segments that are still kept, each
    /// confirmed against its record (a hash matches by chance). A table that cannot be read is an
    /// error, not a miss: it may hold the postback.
    public func earlier(duplicateKey: String, hash: DuplicateKeyHash, in store: RecordLog) throws(PostbackKeyTable.Unreadable) -> [Earlier] {
        let firstKept = store.segments.first?.base ?? 0
        var found: [Earlier] = []
        for table in tables where table.segmentEnd > firstKept {
            for start in try table.starts(of: hash.disk) {
                // Nil for a record retention removed since, or one damaged (the store reports it).
                let earlier = store.record(startingAt: start) { view -> Earlier? in
                    guard let stored = StoredPostback.decode(view), stored.draft.duplicateKey == duplicateKey else { return nil }
                    return Earlier(id: stored.id, contentHash: stored.draft.contentHash, verified: stored.draft.signature.isVerified,
                                   origin: PostbackOrigin(receivedAt: stored.receivedAt, site: stored.draft.site))
                }
                if let earlier { found.append(earlier) }
            }
        }
        return found
    }

    /// Bytes of every table on disk.
    public var bytes: Int { tables.reduce(0) { $0 + $1.fileSize } }
}
