import Foundation
import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The restores a log has been through (`log/RESTORES`), and the ids they keep from being given
/// twice.
///
/// A node restored from a backup has lost what it stored after the backup's cut, but not always
/// what it sent on: ClickHouse and relays may hold those records, under the ids the lost log gave
/// them. Ids given again to new records would merge two records into one in ClickHouse (rows are
/// kept per node and id) and repeat a relay's delivery id. So a restore raises every kind's next
/// id to a floor no lost record can have reached: the restore's time in seconds, shifted left by
/// 20 (a million ids a second since the epoch, under 2^53 so that JSON readers keep every digit
/// until the year 2242), and never below the log's own ids. What ClickHouse holds of the lost
/// log is then left as it is (`ClickHouseExporter.askSentBeforeRestore`).
public struct LogRestore: Codable, Sendable, Equatable {
    public var restoredAt: Timestamp
    /// The next id of each kind the restored log held, by the kind's number (kinds absent: 1).
    public var nextIDs: [String: UInt64]
    /// Every kind's ids start here or above from this restore on.
    public var floor: UInt64

    enum CodingKeys: String, CodingKey {
        case restoredAt = "restored_at", nextIDs = "next_ids", floor
    }

    /// The floor for a restore at `now` of a log whose ids reached `highest`.
    public static func floor(at now: Timestamp, above highest: UInt64) -> UInt64 {
        max(UInt64(max(0, now.millisecondsSinceEpoch / 1000)) << 20, highest)
    }
}

extension LogDirectory {
    /// The restores the log has been through, oldest first (`LogRestore`).
    var restoresPath: String { sealedDirectory + "/RESTORES" }

    func restores() throws(StoreError) -> [LogRestore] {
        guard let data = FileManager.default.contents(atPath: restoresPath) else {
            if FileManager.default.fileExists(atPath: restoresPath) { throw StoreError(operation: "read \(restoresPath)", errno: EIO) }
            return []
        }
        do {
            return try JSONDecoder().decode([LogRestore].self, from: data)
        } catch {
            throw StoreError(operation: "read \(restoresPath): \(error)", errno: EINVAL)
        }
    }
}

extension RecordLog {
    /// Notes in the log in `directory` (closed) that it was restored at `now`, and raises its
    /// next ids above anything the lost log can have given (`LogRestore`); seals the active
    /// segment, so that no segment holds ids from both sides of the floor (a postback key table
    /// counts every id of its segment from the first to the last). Returns the restore.
    public static func markRestored(directory: String, at now: Timestamp) throws -> LogRestore {
        let files = LogDirectory(directory: directory)
        let earlier = try files.restores()
        let store = try RecordLog(directory: directory, committer: .owner)
        defer { store.close() }
        let (ids, end) = store.state.withLock { ($0.nextIDs, $0.end) }
        var nextIDs: [String: UInt64] = [:]
        for (kind, id) in ids.enumerated() where id > 1 { nextIDs[String(kind)] = id }
        let highest = max(ids.max() ?? 1, earlier.map(\.floor).max() ?? 1)
        let restore = LogRestore(restoredAt: now, nextIDs: nextIDs, floor: LogRestore.floor(at: now, above: highest))
        try store.sealActiveSegment()
        guard store.state.withLock({ $0.segments.last?.layout.base }) == end else {
            throw StoreError(operation: "seal the restored log's active segment at \(end): \(store.state.withLock { $0.lastRollError } ?? "the roll failed")", errno: EIO)
        }
        try FileManager.default.createDirectory(atPath: files.sealedDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try LogFile.replaceWhole(path: files.restoresPath, with: Array(try encoder.encode(earlier + [restore])))
        return restore
    }

    /// Seals the active segment now, if it holds anything, and begins its successor.
    func sealActiveSegment() throws {
        committing.withLock { c in
            let end = state.withLock { $0.end }
            guard end > c.writer.layout.base else { return }
            roll(&c.writer, at: end)
        }
    }
}
