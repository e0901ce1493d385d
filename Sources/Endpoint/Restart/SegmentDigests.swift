import Dispatch
import DurableFiles
import Foundation
import Locking
import Primitives
import ReportStore

/// The digests of sealed segments (`SegmentDigest`, in DATA/digests/): what each owner of state a
/// start rebuilds (`RebuiltAtStart`) took from a segment, written by a thread of their own
/// (`segment-digests`, at nice 19) soon after the segment is sealed, once a minute and whenever a
/// manual clock is set. The next start takes the digests instead of the segments, and reads only
/// the log written since the last digested seal; a digest that is missing, damaged or not of this
/// log makes it read the log from there on, as before.
final class SegmentDigests: Sendable {
    let directory: String
    private let owners: [any SegmentDigestOwner]
    private let store: ReportStore
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    private let state = Locked<(stopping: Bool, failures: Int, bases: Set<Int>)>((false, 0, []))
    private let sweeping = Locked(())
    /// Left once the thread's first sweep is done.
    private let firstSweep = DispatchGroup()

    /// `restored`: the digests the start took, known good; any other file is checked by the first
    /// sweep, and written again unless it is whole and of its segment.
    init(directory: String, owners: [any SegmentDigestOwner], store: ReportStore, restored: Restored, clock: EndpointClock,
         announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void) throws {
        self.directory = directory
        self.owners = owners
        self.store = store
        self.announce = announce
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let segments = store.segments
        let good = zip(restored.digests, segments).filter { $0.describes($1) }.map(\.0.base)
        state.withLock { $0.bases = Set(good) }
        clock.whenSet { [wake] in wake.signal() }
        firstSweep.enter()
    }

    func start() {
        stopped.startThread(named: "segment-digests", priority: .background) { [self] in
            var first = true
            while !state.withLock({ $0.stopping }) {
                sweep()
                if first { firstSweep.leave() }
                first = false
                _ = wake.wait(timeout: .now() + 60)
            }
            if first { firstSweep.leave() }
        }
    }

    /// Waits for the sweep the thread makes at start.
    func waitUntilStartSwept() {
        firstSweep.wait()
    }

    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        stopped.wait()
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
        sweeping.withLock { _ in
            let segments = store.segments
            let firstKept = segments.first?.base ?? 0
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                guard let base = Self.base(ofName: name), base < firstKept else { continue }
                unlink(path(base: base))
                state.withLock { _ = $0.bases.remove(base) }
            }
            let known = state.withLock { $0.bases }
            var written: [SegmentDigest] = []
            for segment in segments where segment.sealed && !known.contains(segment.base) {
                guard !state.withLock({ $0.stopping }) else { break }
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
            }
            return written
        }
    }

    /// Rewrites a segment's digest with what its owners still need of it (`compact`): after the
    /// postback window wrote the segment's key table.
    func compact(base: Int) {
        sweeping.withLock { _ in
            guard let data = FileManager.default.contents(atPath: path(base: base)), var digest = SegmentDigest.decode([UInt8](data)) else { return }
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
        var digests: [SegmentDigest] = []
        var replayFrom: Int { digests.last?.end ?? 0 }

        /// Whether each digest taken names the kept segment in its place: only then is what the
        /// owners took the log's.
        func describes(_ segments: [ReportStore.Segment]) -> Bool {
            guard digests.count <= segments.count else { return false }
            return zip(digests, segments).allSatisfy { $0.describes($1) }
        }
    }

    /// Before the log is opened: reads the digests of the sealed segments, oldest first and
    /// without a gap, until one is missing or cannot be read by every owner, and has the owners
    /// take them, in order.
    static func restore(dataDirectory: String, directory: String, owners: [any SegmentDigestOwner]) -> Restored {
        let bases = ReportStore.sealedSegmentBases(directory: dataDirectory)
        var restored = Restored()
        var takes: [@Sendable () -> Void] = []
        for (i, base) in bases.enumerated() {
            let path = directory + "/" + String(base) + ".digest"
            guard let data = FileManager.default.contents(atPath: path), let digest = SegmentDigest.decode([UInt8](data)),
                  digest.base == base, i + 1 == bases.count || digest.end == bases[i + 1] else { break }
            var segmentTakes: [@Sendable () -> Void] = []
            for owner in owners {
                guard let take = digest.sections[owner.digestName].flatMap({ owner.readDigest($0, of: digest) }) else { break }
                segmentTakes.append(take)
            }
            guard segmentTakes.count == owners.count else { break }
            takes += segmentTakes
            restored.digests.append(digest)
        }
        for take in takes { take() }
        return restored
    }
}
