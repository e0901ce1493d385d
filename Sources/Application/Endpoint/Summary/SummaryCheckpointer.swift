import Dispatch
import Foundation
import Locking
import RecordLog

/// Decides when the summary's checkpoint is written, and writes it off the event loop.
///
/// A checkpoint must hold exactly the reports of the log prefix it names. The event loop is where
/// that is true: at the end of a turn, after the turn's commit, every report on disk has been
/// counted by its completion and no other is. So the loop takes the snapshot (a copy-on-write copy
/// of the aggregates, no bytes copied) and this type's own thread encodes and writes it. At most
/// one a minute by default (`--summary-checkpoint-interval`) while reports arrive, so a crash
/// costs at most that much rebuilding; and one at shutdown, so a planned restart rebuilds nothing.
final class SummaryCheckpointer: Sendable {
    let path: String
    private let store: RecordLog
    private let summary: SummaryStore
    private let interval: UInt64

    private struct State {
        var pending: (LogPrefix, SummaryAggregates)?
        var written: LogPrefix?
        var stopping = false
    }
    private let state: Locked<State>
    /// Touched only by the event loop, in `turnEnded`.
    private nonisolated(unsafe) var lastOffered: UInt64 = 0
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()

    init(directory: String, store: RecordLog, summary: SummaryStore, interval: Double = 60) {
        path = directory + "/" + SummaryCheckpoint.fileName
        self.store = store
        self.summary = summary
        self.interval = UInt64(interval * 1e9)
        state = Locked(State())
        stopped.startThread(named: "summary-checkpoint") { [self] in run() }
    }

    /// The checkpoint on disk holds `prefix` (it was found valid at start): nothing to write until
    /// the log grows past it.
    func adopt(_ prefix: LogPrefix) {
        state.withLock { $0.written = prefix }
    }

    /// The log offset the checkpoint on disk covers: what a restart counts without the log.
    var writtenThrough: Int { state.withLock { $0.written?.end ?? 0 } }

    /// Called by the event loop at the end of each turn, after its commit. Costs a clock read
    /// unless a checkpoint is due.
    func turnEnded() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- lastOffered >= interval || lastOffered == 0 else { return }
        let prefix = store.durablePrefix
        guard state.withLock({ $0.written != prefix }), let aggregates = summary.snapshot() else { return }
        lastOffered = now
        state.withLock { $0.pending = (prefix, aggregates) }
        wake.signal()
    }

    /// At shutdown, once the store is closed: stops the thread, then writes the final checkpoint
    /// on the calling thread if the summary is complete and the log moved since the last one.
    func finish() {
        state.withLock { $0.stopping = true }
        wake.signal()
        stopped.wait()
        let prefix = store.durablePrefix
        guard state.withLock({ $0.written != prefix }), let aggregates = summary.snapshot() else { return }
        write(aggregates, prefix)
    }

    private func run() {
        while true {
            wake.wait()
            let (job, stopping) = state.withLock { s in
                defer { s.pending = nil }
                return (s.pending, s.stopping)
            }
            if let (prefix, aggregates) = job { write(aggregates, prefix) }
            if stopping { return }
        }
    }

    private func write(_ aggregates: SummaryAggregates, _ prefix: LogPrefix) {
        let started = Date()
        do {
            let bytes = try SummaryCheckpoint.write(aggregates, prefix: prefix, toPath: path)
            state.withLock { $0.written = prefix }
            EventLog.write("summary_checkpoint", ["records": .number(String(prefix.records)), "bytes": .number(String(bytes)),
                                                  "seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started)))])
        } catch {
            // The log is the truth: without a checkpoint the next start rebuilds, nothing is lost.
            EventLog.write("summary_checkpoint_failed", ["error": .string("\(error)")])
        }
    }
}
