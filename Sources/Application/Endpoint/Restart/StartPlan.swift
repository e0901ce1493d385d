import RecordLog

/// What a start reads, decided from what is on disk: pure decisions, each taken as soon as what
/// it needs is known (`LogRecovery` carries them out).
///
/// The state a start rebuilds (`RecoveredState`) comes from the sealed segments' digests and
/// then the log written after them. Reports need theirs whole before the endpoint listens;
/// the postback ledger and the Apps view may follow on a thread when reading them now would
/// mean reading segments the report path can skip. Digests or postback key tables that do not
/// describe the log on disk (a log restored beside newer files) are never trusted.
enum StartPlan {
    /// How the log is read after the digests were taken.
    struct Reading: Equatable {
        /// Read now, before listening, through the log's end.
        var from: Int
        /// Whether what is read now feeds every owner, or only the report path's.
        var everyone: Bool
        /// Where the postback ledger and the Apps view read from in the background, when
        /// `everyone` is false.
        var postbacksFrom: Int?

        static func everyone(from offset: Int) -> Reading { Reading(from: offset, everyone: true, postbacksFrom: nil) }
    }

    /// Before the log is opened: with no digest at all (a log written before them, or with them
    /// removed) the owners take every record as the log is opened, in one pass. With any digest
    /// file, even a damaged first one, they take the digests first and the log after them.
    static func readsWhileOpening(chain: SegmentDigests.Restored, digestsDirectoryNames: [String]) -> Bool {
        chain.digests.isEmpty && digestsDirectoryNames.allSatisfy { !$0.hasSuffix(".digest") }
    }

    /// Whether the digests and the postback key tables are this log's; if not, they go and the
    /// log is read again.
    static func trustsDigests(_ chain: SegmentDigests.Restored, postbackTablesDescribe: Bool, segments: [RecordLog.Segment]) -> Bool {
        chain.describes(segments) && postbackTablesDescribe
    }

    /// The Apple Ads outbox takes the digests of segments more than a day old and reads the log
    /// from the first it misses. When they do not cover every sealed segment but the newest, it
    /// reads on a thread of its own while the endpoint serves (its paths answer 503 meanwhile).
    static func outboxReplaysInBackground(segments: [RecordLog.Segment], chain: SegmentDigests.Restored) -> Bool {
        let sealed = segments.filter(\.sealed).count
        guard sealed > 1 else { return false }
        let older = chain.digests.prefix(sealed - 1)
        let covered = chain.describes(segments) && chain.digests.count >= sealed - 1
            && older.allSatisfy { chain.sectionNames[$0.base]?.contains(AppleAdsOutbox.digestSection) == true }
        return !covered
    }

    /// After trusted digests, taken through `replayFrom`. Nil when the log was read as it was
    /// opened. Otherwise one pass for everyone when only the active segment is left, or when the
    /// report path needs every segment after the digests anyway (token keys never rotated): a
    /// background pass could only read the same bytes again, and refuse postbacks meanwhile. A
    /// digest missing or damaged before the last seal leaves the ledger to read from it on in
    /// the background, and the report path reads only what it needs now.
    static func afterDigests(replayFrom: Int, segments: [RecordLog.Segment], reportsFrom: Int, readWhileOpening: Bool) -> Reading? {
        guard !readWhileOpening else { return nil }
        let sealedEnd = segments.last(where: \.sealed)?.end ?? 0
        if replayFrom >= sealedEnd || reportsFrom <= replayFrom { return .everyone(from: replayFrom) }
        return Reading(from: max(replayFrom, reportsFrom), everyone: false,
                       postbacksFrom: max(replayFrom, segments.first?.base ?? 0))
    }

    /// Without trusted digests: what reports need now, and the ledger and the Apps view in the
    /// background, when the report path can skip segments; else everything now.
    static func withoutDigests(segments: [RecordLog.Segment], reportsFrom: Int) -> Reading {
        let first = segments.first?.base ?? 0
        guard reportsFrom > first else { return .everyone(from: reportsFrom) }
        return Reading(from: reportsFrom, everyone: false, postbacksFrom: first)
    }
}
