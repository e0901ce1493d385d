import Dispatch
import Foundation
import Locking
import PCMRecords
import Postbacks
import Primitives
import RecordLog

/// A start's reading of what is on disk, as `StartPlan` decides it: the digests' chain, the log
/// opened, the owners of `RecoveredState` fed from digests and the log after them, and the Apple
/// Ads outbox rebuilt beside them. A segment that cannot be read (EIO, EMFILE) stops the start:
/// ledgers short of it would count a postback twice.
struct LogRecovery {
    /// What the start has once the owners hold what the report path needs.
    struct Recovered {
        let store: RecordLog
        let state: RecoveredState
        let appleAds: AppleAdsOutbox
        /// The digests taken (all the chain's when the log was read again), for `SegmentDigests`.
        let restored: SegmentDigests.Restored
        /// Segments taken from their digests instead of read (0 when the log was read again).
        let startedFromDigests: Int
        /// Where the postback ledger and the Apps view still read from, in the background.
        let postbacksFrom: Int?
        /// What the start spent, in seconds: "digests" (the digests and the log after them) and
        /// "apple_ads" (the outbox), side by side.
        let seconds: [String: Double]
    }

    let dataDirectory: String
    let digestsDirectory: String
    let archive: PostbackArchive
    /// Fresh owners, with nothing taken.
    let rebuilt: () -> RecoveredState
    /// Opens the log, handing `replaying` each record from `replayFrom` on (`.max`: none).
    let openLog: (_ replayFrom: Int, _ replaying: (RecordLog.RecordView) -> Void) throws -> RecordLog
    /// `RecoveredState.reportStateFrom` for the opened log's segments.
    let reportsFrom: ([RecordLog.Segment]) -> Int
    /// The outbox, reading its log in the background or not.
    let makeOutbox: (_ store: RecordLog, _ inBackground: Bool) -> AppleAdsOutbox

    func run() throws -> Recovered {
        var state = rebuilt()
        let chain = SegmentDigests.chain(dataDirectory: dataDirectory, directory: digestsDirectory, owners: state.owners)
        let readWhileOpening = StartPlan.readsWhileOpening(
            chain: chain, digestsDirectoryNames: (try? FileManager.default.contentsOfDirectory(atPath: digestsDirectory)) ?? [])
        let replaying = state
        // Otherwise every sealed segment is taken from its index: what the owners need of it is
        // read below, from digests or the log, and only once.
        let store = readWhileOpening ? try openLog(0, { replaying.take($0) }) : try openLog(.max, { _ in })
        let segments = store.segments
        let inBackground = StartPlan.outboxReplaysInBackground(segments: segments, chain: chain)
        let reportsFrom = self.reportsFrom(segments)
        var seconds: [String: Double] = [:]

        guard StartPlan.trustsDigests(chain, postbackTablesDescribe: archive.describes(segments), segments: segments) else {
            EventLog.write("start_rebuilt_from_log", ["digests": .number(String(chain.digests.count)),
                                                      "postback_key_tables": .number(String(archive.tables.count))])
            if !archive.describes(segments) { archive.removeAll() }
            state = rebuilt()
            // What outlives removed segments is still theirs: the removed digests are not of a log.
            var removedOnly = SegmentDigests.Restored()
            removedOnly.removed = chain.removed
            _ = SegmentDigests.take(removedOnly, directory: digestsDirectory, owners: state.owners)
            let reading = StartPlan.withoutDigests(segments: segments, reportsFrom: reportsFrom)
            guard Self.read(reading, store: store, owners: state) else {
                throw StoreError(operation: "read the log from offset \(reading.from)", errno: EIO)
            }
            var restored = SegmentDigests.Restored()
            restored.digests = chain.digests
            return Recovered(store: store, state: state, appleAds: makeOutbox(store, inBackground), restored: restored,
                             startedFromDigests: 0, postbacksFrom: reading.postbacksFrom, seconds: seconds)
        }

        // Two threads: the owners take the digests and the log after them while the outbox reads
        // its last day. Neither touches the other's state, and the log is only read.
        let owners = state
        let taken = Locked<(restored: SegmentDigests.Restored, seconds: Double, whole: Bool, reading: StartPlan.Reading?)>(
            (SegmentDigests.Restored(), 0, true, nil))
        let taking = DispatchGroup()
        taking.startThread(named: "start-digests") { [digestsDirectory] in
            let started = Date()
            // Also what removed segments' digests keep, when no sealed segment has one.
            let restored = SegmentDigests.take(chain, directory: digestsDirectory, owners: owners.owners)
            let reading = StartPlan.afterDigests(replayFrom: restored.replayFrom, segments: segments, reportsFrom: reportsFrom,
                                                 readWhileOpening: readWhileOpening)
            let whole = reading.map { Self.read($0, store: store, owners: owners) } ?? true
            taken.withLock { $0 = (restored, Date().timeIntervalSince(started), whole, reading) }
        }
        let started = Date()
        let appleAds = makeOutbox(store, inBackground)
        seconds["apple_ads"] = Date().timeIntervalSince(started)
        taking.wait()
        let result = taken.withLock { $0 }
        seconds["digests"] = result.seconds
        guard result.whole else {
            throw StoreError(operation: "read the log after its digests, from offset \(result.restored.replayFrom)", errno: EIO)
        }
        return Recovered(store: store, state: state, appleAds: appleAds, restored: result.restored,
                         startedFromDigests: result.restored.digests.count, postbacksFrom: result.reading?.postbacksFrom,
                         seconds: seconds)
    }

    /// Reads what `reading` says through the log's end; false when a segment could not be read.
    private static func read(_ reading: StartPlan.Reading, store: RecordLog, owners: RecoveredState) -> Bool {
        let end = store.bytesOnDisk
        return store.scanEveryRecord(from: reading.from, through: end) { record in
            if reading.everyone { owners.take(record) } else { owners.takeForReports(record) }
            return true
        } >= end
    }
}
