import DurableFiles
import Foundation
import Locking
import Primitives
import RecordLog

/// The digests of sealed segments (`SegmentDigest`, in DATA/digests/): what each owner of state a
/// start rebuilds (`RecoveredState`) took from a segment, written by a thread of their own
/// (`segment-digests`, at nice 19) soon after the segment is sealed, once a minute and whenever a
/// manual clock is set. The next start takes the digests instead of the segments, and reads only
/// the log written since the last digested seal; a digest that is missing or damaged makes it read
/// the log from that segment on, and one of another log (a restored `log/` beside newer digests)
/// makes it read the whole log again, once: that digest is removed and written anew.
final class SegmentDigests: PeriodicallySwept {
    let directory: String
    private let owners: [any SegmentDigestOwner]
    private let store: RecordLog
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    let thread = PeriodicSweep(named: "segment-digests", priority: .background)
    private let state = Locked<(failures: Int, bases: Set<Int>, toCompact: [Int])>((0, [], []))
    /// One sweep at a time: the thread's, or one asked for by hand.
    private let sweeping = CriticalSection()

    /// `restored`: the digests the start took, known good; any other file is checked by the first
    /// sweep, and written again unless it is whole and of its segment.
    init(directory: String, owners: [any SegmentDigestOwner], store: RecordLog, restored: Restored, clock: EndpointClock,
         announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void) throws {
        self.directory = directory
        self.owners = owners
        self.store = store
        self.announce = announce
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let segments = store.segments
        var good: Set<Int> = []
        for (digest, segment) in zip(restored.digests, segments) {
            // One of another log is gone at once, so that it cannot make every start read the log.
            guard digest.describes(segment) else {
                unlink(path(base: digest.base))
                continue
            }
            // One without a section an owner now keeps (written before it kept one) is written again.
            if owners.allSatisfy({ restored.sectionNames[digest.base]?.contains($0.digestName) == true }) { good.insert(digest.base) }
        }
        state.withLock { $0.bases = good }
        clock.whenSet { [thread] in thread.wake() }
    }

    /// Just after the last sealed segment, counted from the oldest kept, that has its digest:
    /// retention removes no segment before its digest holds what outlives it.
    var digestedThrough: Int {
        let segments = store.segments
        let known = state.withLock { $0.bases }
        var through = segments.first?.base ?? 0
        for segment in segments where segment.sealed {
            guard known.contains(segment.base) else { break }
            through = segment.end
        }
        return through
    }

    /// Digests that could not be written since start (the disk full); those segments are read at
    /// the next start meanwhile.
    var failures: Int { state.withLock { $0.failures } }
    var count: Int { state.withLock { $0.bases.count } }

    func path(base: Int) -> String { directory + "/" + String(base) + ".digest" }

    private static func base(ofName name: String) -> Int? {
        guard name.hasSuffix(".digest") else { return nil }
        return Int(name.dropLast(7))
    }

    /// Writes the digest of every sealed segment that has none, oldest first, and removes those
    /// of segments retention removed. Returns the digests written.
    @discardableResult
    func sweep() -> [SegmentDigest] {
        sweeping.run {
            compactQueued()
            let segments = store.segments
            let firstKept = segments.first?.base ?? 0
            // A removed segment's digest keeps what outlives its records (the Apps view's days).
            let outliving = owners.filter(\.keptAfterRemoval).map(\.digestName)
            for base in state.withLock({ $0.bases }) where base < firstKept {
                state.withLock { _ = $0.bases.remove(base) }
                guard let data = FileManager.default.contents(atPath: path(base: base)), var digest = SegmentDigest.decode([UInt8](data)),
                      !outliving.isEmpty else {
                    unlink(path(base: base))
                    continue
                }
                digest.sections = digest.sections.filter { outliving.contains($0.key) }
                try? DurableFile.replace(path: path(base: base), with: digest.encoded())
            }
            let known = state.withLock { $0.bases }
            var written: [SegmentDigest] = []
            for segment in segments where segment.sealed && !known.contains(segment.base) {
                guard !thread.stopping else { break }
                // One written before this start and not taken by it (after a gap): kept if whole.
                if let data = FileManager.default.contents(atPath: path(base: segment.base)),
                   let found = SegmentDigest.decode([UInt8](data)), found.describes(segment),
                   owners.allSatisfy({ found.sections[$0.digestName] != nil }) {
                    state.withLock { _ = $0.bases.insert(segment.base) }
                    continue
                }
                var digesters = owners.map { $0.digester() }
                let reached = store.scanEveryRecord(from: segment.base, through: segment.end) { view in
                    for i in digesters.indices { digesters[i].take(view) }
                    return true
                }
                guard reached >= segment.end else { break }
                var digest = SegmentDigest(base: segment.base, end: segment.end, records: segment.records, sections: [:])
                for (owner, digester) in zip(owners, digesters) {
                    let bytes = digester.finish()
                    digest.sections[owner.digestName] = owner.compact(bytes, of: digest) ?? bytes
                }
                do {
                    try DurableFile.replace(path: path(base: segment.base), with: digest.encoded())
                } catch {
                    state.withLock { $0.failures += 1 }
                    announce("segment_digest_failed", [("segment", .number(String(segment.base))), ("error", .string("\(error)"))])
                    break
                }
                state.withLock { _ = $0.bases.insert(segment.base) }
                written.append(digest)
                // A table written meanwhile makes its digest smaller: not after the whole history.
                compactQueued()
            }
            compactQueued()
            return written
        }
    }

    /// Asks the thread to rewrite a segment's digest with what its owners still need of it
    /// (`compact`): after the postback window wrote the segment's key table. Returns at once.
    func compact(base: Int) {
        state.withLock { $0.toCompact.append(base) }
        thread.wake()
    }

    private func compactQueued() {
        for base in state.withLock({ s in defer { s.toCompact = [] }; return s.toCompact }) {
            guard let data = FileManager.default.contents(atPath: path(base: base)), var digest = SegmentDigest.decode([UInt8](data)) else { continue }
            var changed = false
            for owner in owners {
                guard let bytes = digest.sections[owner.digestName], let kept = owner.compact(bytes, of: digest), kept != bytes else { continue }
                digest.sections[owner.digestName] = kept
                changed = true
            }
            if changed { try? DurableFile.replace(path: path(base: base), with: digest.encoded()) }
        }
    }

    // MARK: - At start

    /// What a start took from digests: the segments, and where the log must be read from.
    struct Restored {
        /// The digests taken, without their sections.
        var digests: [SegmentDigest] = []
        /// Each one's sections' names.
        var sectionNames: [Int: Set<String>] = [:]
        /// The bases of removed segments' digests.
        var removed: [Int] = []
        var replayFrom: Int { digests.last?.end ?? 0 }

        /// Whether each digest taken names the kept segment in its place: only then is what the
        /// owners took the log's.
        func describes(_ segments: [RecordLog.Segment]) -> Bool {
            guard digests.count <= segments.count else { return false }
            return zip(digests, segments).allSatisfy { $0.describes($1) }
        }
    }

    /// Before the log is opened: the digests of the sealed segments, oldest first and without a
    /// gap, until one is missing, damaged or without every owner's section. Only their headers
    /// are kept; the log is then opened to read from the end of the last.
    static func chain(dataDirectory: String, directory: String, owners: [any SegmentDigestOwner]) -> Restored {
        let bases = RecordLog.sealedSegmentBases(directory: dataDirectory)
        var chain = Restored()
        for (i, base) in bases.enumerated() {
            guard let data = FileManager.default.contents(atPath: directory + "/" + String(base) + ".digest"),
                  let digest = SegmentDigest.decode([UInt8](data)),
                  digest.base == base, i + 1 == bases.count || digest.end == bases[i + 1],
                  owners.allSatisfy({ digest.sections[$0.digestName] != nil }) else { break }
            chain.sectionNames[digest.base] = Set(digest.sections.keys)
            chain.digests.append(SegmentDigest(base: digest.base, end: digest.end, records: digest.records, sections: [:]))
        }
        // Segments retention removed: every digest before the oldest sealed segment kept, or all
        // of them when none is.
        chain.removed = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap(base(ofName:))
            .filter { base in bases.first.map { base < $0 } ?? true }.sorted()
        return chain
    }

    /// Has the owners take the chain's digests, in order, each segment only once every owner has
    /// read its section (so that a start holds one segment's worth at a time), and before them
    /// what outlives the removed segments' records. Returns the chain taken: cut at the first
    /// digest an owner could not read, from whose segment on the log must then be read.
    static func take(_ chain: Restored, directory: String, owners: [any SegmentDigestOwner]) -> Restored {
        for base in chain.removed {
            guard let data = FileManager.default.contents(atPath: directory + "/" + String(base) + ".digest"),
                  let digest = SegmentDigest.decode([UInt8](data)) else { continue }
            for owner in owners where owner.keptAfterRemoval {
                owner.readRemovedDigest(digest.sections, of: digest)?()
            }
        }
        var taken = Restored()
        for header in chain.digests {
            guard let data = FileManager.default.contents(atPath: directory + "/" + String(header.base) + ".digest"),
                  let digest = SegmentDigest.decode([UInt8](data)), digest.base == header.base, digest.end == header.end else { break }
            let takes = owners.compactMap { owner in digest.sections[owner.digestName].flatMap { owner.readDigest($0, of: digest) } }
            guard takes.count == owners.count else { break }
            for take in takes { take() }
            taken.sectionNames[header.base] = chain.sectionNames[header.base]
            taken.digests.append(header)
        }
        return taken
    }
}
