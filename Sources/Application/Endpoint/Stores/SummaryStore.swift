import PCM
import Primitives
import Locking
import PCMRecords
import RecordLog

/// The aggregates behind a lock: each report is staged while its batch is flushed and merged
/// once it is stored, by its steps on the event loop, and the summary API reads them. At start they are rebuilt from the log on a thread of their own while the endpoint
/// already takes reports: those go to `live` and are merged in when the rebuild is done.
final class SummaryStore: Sendable {
    private struct State {
        var main = SummaryAggregates()
        var live = SummaryAggregates()
        /// Reports written to the log but not yet flushed, counted apart where no reader sees them.
        var staged = SummaryAggregates()
        /// Until the first rebuild from the log is done, the counts are not the log's.
        var rebuilding = true
        var rebuildStart = 0
        var rebuildEnd = 0
        var rebuildScanned = 0
    }
    private let state: Locked<State>

    /// `complete`: the counts start out as the log's (an empty log); otherwise the summary is
    /// unavailable until `rebuild` has read the log.
    init(complete: Bool) {
        var state = State()
        state.rebuilding = !complete
        self.state = Locked(state)
    }

    /// A report written to the log whose flush is still in flight: counted now, while the disk is
    /// busy and the event loop would otherwise wait for it, but shown only once `commitStaged`
    /// says the flush succeeded. The store tells the reports of the batch it is committing
    /// `written`, then `stored` or (all of them) `failed`, one batch at a time: what is staged
    /// always belongs to that batch and is merged or dropped with it.
    func stage(_ report: StoredReport, _ facts: ReportFacts) {
        state.withLock { $0.staged.add(report, facts) }
    }

    /// The staged batch is on disk: it joins the counts. The first report told `stored` merges the
    /// whole batch; the others find nothing left.
    func commitStaged() {
        state.withLock { s in
            guard !s.staged.isEmpty else { return }
            if s.rebuilding { s.live.merge(s.staged) } else { s.main.merge(s.staged) }
            s.staged = SummaryAggregates()
        }
    }

    /// The staged batch could not be flushed: none of it is counted.
    func dropStaged() {
        state.withLock { $0.staged = SummaryAggregates() }
    }

    /// Rebuilds from `base` (nothing, or a checkpoint's aggregates of the log up to `start`) and
    /// every report in the log from `start` to `end` (the log's size when the endpoint started),
    /// while reports stored meanwhile are counted apart and merged at the end. Returns false when
    /// `shouldStop` ended it early (shutdown): the summary then stays unavailable, never partial.
    @discardableResult
    func rebuild(from store: RecordLog, base: SummaryAggregates = SummaryAggregates(), start: Int = 0, through end: Int,
                 shouldStop: @escaping () -> Bool) -> Bool {
        guard end > start else {
            // Nothing to read: the base and what was counted so far, in one step, so that the
            // summary is never unavailable for it.
            state.withLock { s in
                var built = base
                built.merge(s.live)
                built.merge(s.main)
                (s.main, s.live, s.rebuilding) = (built, SummaryAggregates(), false)
            }
            return true
        }
        state.withLock { s in
            s.rebuilding = true
            s.rebuildStart = start
            s.rebuildEnd = end
            s.rebuildScanned = start
            // Anything counted before the rebuild began is kept apart like what comes during it.
            s.live.merge(s.main)
            s.main = SummaryAggregates()
        }
        var built = base
        var sites = InternedStrings()
        var count = 0
        var stopped = false
        store.scanReports(from: start, through: end) { report in
            if let facts = ReportFacts.scan(report.body, sites: &sites) { built.add(report, facts) }
            count += 1
            if count % 65536 == 0 {
                state.withLock { $0.rebuildScanned = report.recordEnd }
                stopped = shouldStop()
                return !stopped
            }
            return true
        }
        if stopped { return false }
        state.withLock { s in
            built.merge(s.live)
            s.main = built
            s.live = SummaryAggregates()
            s.rebuilding = false
        }
        return true
    }

    /// The aggregates as they stand, or nil while the rebuild after a start is running: a
    /// checkpoint takes this at a moment when they hold exactly the reports on disk.
    func snapshot() -> SummaryAggregates? {
        state.withLock { $0.rebuilding ? nil : $0.main }
    }

    /// The aggregates, or nil with the fraction done while the rebuild at start is running.
    /// `body` runs outside the lock, on a copy (copy-on-write: the commit that follows copies what
    /// it changes), so that a long read never holds up the loop's commit.
    func read<T>(_ body: (SummaryAggregates) -> T) -> Result<T, RebuildProgress> {
        let taken = state.withLock { s -> Result<SummaryAggregates, RebuildProgress> in
            s.rebuilding
                ? .failure(RebuildProgress(fraction: Double(s.rebuildScanned - s.rebuildStart) / Double(max(1, s.rebuildEnd - s.rebuildStart))))
                : .success(s.main)
        }
        return taken.map(body)
    }

    struct RebuildProgress: Error { var fraction: Double }
}
