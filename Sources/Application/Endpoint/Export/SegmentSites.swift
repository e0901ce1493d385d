import DurableFiles
import Foundation
import Locking
import RecordLog

/// Which served sites each sealed segment holds records for, kind by kind, so that a scoped
/// export (a viewer token of one advertiser, `?advertiser=`) never opens a segment that holds
/// none of its sites: its cost is the segments that concern it, not the log.
///
/// Written by a thread of its own (`segment-sites`, nice 19) soon after a segment is sealed, as
/// `DATA/segment-sites/<base>.json`; read back at start. The active segment is described in memory
/// as far as the thread has read it, every few seconds, so that a scoped export reads only the
/// seconds of it written since. A segment not described yet (one sealed a moment ago, or every one
/// after an upgrade until the thread has been through them) is read, as before. The sites are
/// served sites only (a record sent to any other was refused), so a description is as small as
/// the list of sites.
final class SegmentSites: PeriodicallySwept {
    /// How an exported kind's record tells its site.
    struct Kind: Sendable {
        var kind: RecordKind
        var site: @Sendable () -> (RecordLog.RecordView) -> String?

        /// The `site` column of `codec`'s rows.
        init(_ codec: some RecordCodec) {
            kind = codec.kind
            let column = codec.columns.firstIndex(of: "site")
            site = {
                let read = codec.reader()
                return { view in
                    guard let column, let row = read(view), column < row.cells.count else { return nil }
                    return row.cells[column]
                }
            }
        }
    }

    private struct Description: Codable, Sendable {
        var base: Int
        var end: Int
        /// By kind number.
        var sites: [String: [String]]
    }

    let directory: String
    private let store: RecordLog
    private let kinds: [Kind]
    let thread = PeriodicSweep(named: "segment-sites", priority: .idle, interval: 5)
    /// By segment base: each kind's sites.
    private let described = Locked<[Int: [UInt8: Set<String>]]>([:])
    /// The active segment, described from its base up to `through` (a record boundary).
    private let active = Locked<(base: Int, through: Int, sites: [UInt8: Set<String>])?>(nil)

    init(directory: String, store: RecordLog, kinds: [Kind]) throws {
        self.directory = directory
        self.store = store
        self.kinds = kinds
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let segments = Dictionary(store.segments.filter(\.sealed).map { ($0.base, $0) }, uniquingKeysWith: { a, _ in a })
        var found: [Int: [UInt8: Set<String>]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard name.hasSuffix(".json"), let base = Int(name.dropLast(5)) else { continue }
            // One of a segment no longer kept, or of another log, is written again or removed.
            guard let segment = segments[base], let description = try? Self.file(directory, base).load(),
                  description.base == base, description.end == segment.end else {
                unlink(directory + "/" + name)
                continue
            }
            var byKind: [UInt8: Set<String>] = [:]
            for (kind, sites) in description.sites { if let number = UInt8(kind) { byKind[number] = Set(sites) } }
            found[base] = byKind
        }
        described.withLock { $0 = found }
    }

    private static func file(_ directory: String, _ base: Int) -> DurableJSONFile<Description> {
        DurableJSONFile(path: directory + "/\(base).json", empty: Description(base: base, end: 0, sites: [:]), mode: 0o600)
    }

    /// Segments described.
    var count: Int { described.withLock { $0.count } }

    /// For `RecordLog.records(of:skipping:)`: up to where a segment can be passed over by a
    /// reader of `kind`'s records at `sites` alone: the whole of a sealed one described as holding
    /// none of them, the described start of the active one likewise; nil: read it.
    func skipping(_ kind: RecordKind, unless sites: Set<String>) -> (Int) -> Int? {
        let snapshot = described.withLock { all in all.mapValues { $0[kind.number] ?? [] } }
        let activeSnapshot = active.withLock { $0.map { (base: $0.base, through: $0.through, held: $0.sites[kind.number] ?? []) } }
        return { base in
            if let held = snapshot[base] { return held.isDisjoint(with: sites) ? Int.max : nil }
            if let active = activeSnapshot, active.base == base, active.held.isDisjoint(with: sites) { return active.through }
            return nil
        }
    }

    /// What `kinds` say of the records in `[start, end)`, added to `sites`; where the reading got
    /// to (`end` unless stopped or unreadable).
    private func describe(from start: Int, through end: Int, into sites: inout [UInt8: Set<String>]) -> Int {
        let readers = kinds.map { ($0.kind.number, $0.site()) }
        return store.scanRecords(ofAny: kinds.map(\.kind), from: start, through: end) { view in
            for (kind, site) in readers where kind == view.kind {
                if let name = site(view) { sites[kind, default: []].insert(name) }
            }
            return !thread.stopping
        }
    }

    /// Describes every sealed segment not described yet, oldest first; forgets removed ones.
    func sweep() {
        let segments = store.segments.filter(\.sealed)
        let kept = Set(segments.map(\.base))
        let gone = described.withLock { all -> [Int] in
            let gone = all.keys.filter { !kept.contains($0) }
            for base in gone { all[base] = nil }
            return gone
        }
        for base in gone { unlink(directory + "/\(base).json") }
        for segment in segments where described.withLock({ $0[segment.base] == nil }) {
            guard !thread.stopping else { return }
            // The segment that was active: what was read of it already is not read again.
            var sites: [UInt8: Set<String>] = [:]
            var from = segment.base
            if let known = active.withLock({ $0 }), known.base == segment.base, known.through <= segment.end {
                (sites, from) = (known.sites, known.through)
            }
            let reached = describe(from: from, through: segment.end, into: &sites)
            guard reached >= segment.end else { return }
            let description = Description(base: segment.base, end: segment.end,
                                          sites: Dictionary(uniqueKeysWithValues: sites.map { (String($0.key), $0.value.sorted()) }))
            // Unwritten (the disk full), it is still used until the next start, which reads it again.
            try? Self.file(directory, segment.base).save(description)
            described.withLock { $0[segment.base] = sites }
        }
        describeActive()
    }

    /// Reads what was written to the active segment since the last sweep.
    private func describeActive() {
        guard let current = store.segments.last, !current.sealed, !thread.stopping else { return }
        var (through, sites) = (current.base, [UInt8: Set<String>]())
        if let known = active.withLock({ $0 }), known.base == current.base { (through, sites) = (known.through, known.sites) }
        let end = current.end
        guard end > through else { return }
        let reached = describe(from: through, through: end, into: &sites)
        active.withLock { $0 = (current.base, reached, sites) }
    }
}
