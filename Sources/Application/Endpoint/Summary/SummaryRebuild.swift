import Dispatch
import Foundation
import Locking
import RecordLog

/// The summary's rebuild at start, on a thread of its own, so that the endpoint serves first: a
/// restart with ten million reports takes reports at once, and the summary API answers 503 with
/// its progress until it is ready. It starts from the checkpoint when that still describes the
/// log (`SummaryCheckpoint.restore`), and reads the rest of the log up to its size at start.
final class SummaryRebuild: Sendable {
    private let summary: SummaryStore
    private let store: RecordLog
    private let checkpointer: SummaryCheckpointer
    /// The log prefix the checkpoint claimed (read from its header before replay).
    private let claimed: LogPrefix?
    /// The log's size at start: what lies before it is the rebuild's, what comes after the turns'.
    private let end: Int
    private let done = DispatchGroup()
    private let outcome = Locked<String?>(nil)
    private let stopping = Locked(false)

    init(summary: SummaryStore, store: RecordLog, checkpointer: SummaryCheckpointer, claimed: LogPrefix?) {
        self.summary = summary
        self.store = store
        self.checkpointer = checkpointer
        self.claimed = claimed
        self.end = store.bytesOnDisk
    }

    func start() {
        let (summary, store, end, stopping) = (self.summary, self.store, self.end, self.stopping)
        let (claimed, checkpointer, outcome) = (self.claimed, self.checkpointer, self.outcome)
        done.startThread(named: "summary-rebuild") {
            let started = Date()
            let (base, from, found) = SummaryCheckpoint.restore(atPath: checkpointer.path, claimed: claimed,
                                                                replayed: store.replay.prefixAtFingerprint)
            if found == "used", let claimed { checkpointer.adopt(claimed) }
            guard summary.rebuild(from: store, base: base, start: from, through: end, shouldStop: { stopping.withLock { $0 } }) else { return }
            outcome.withLock { $0 = found }
            EventLog.write("summary_rebuilt", [
                "seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started))),
                "checkpoint": .string(found), "bytes_read": .number(String(max(0, end - from))),
            ])
        }
    }

    /// Stops a rebuild still under way (the endpoint is stopping) and waits for its thread.
    func stop() {
        stopping.withLock { $0 = true }
        done.wait()
    }

    func waitUntilDone() {
        done.wait()
    }

    /// What became of the checkpoint, once the rebuild is done: `used`, `missing`, `stale` (the
    /// log no longer begins as it did) or `damaged…`.
    var checkpointOutcome: String? { outcome.withLock { $0 } }
}
