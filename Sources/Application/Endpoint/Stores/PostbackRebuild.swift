import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

/// The postback ledger and the Apps view's counts, read again from the log on a thread of their
/// own when a start could not take them from digests (one damaged, missing in the middle of the
/// chain, or of another log, as beside a restored `log/`; or a key table not of this log) and the
/// report path can do with fewer segments. What reports need, the triggers and the verified
/// tokens, is read before listening from the segments recent enough to hold it
/// (`RecoveredState.reportStateFrom`); then the endpoint listens and takes reports, which browsers
/// never send again.
///
/// Until the ledger is whole a postback cannot be told from a repeat, so the postback paths answer
/// 503 with Retry-After (devices send again, up to nine times over nine days), and so do the Apps
/// summary and the postback export, whose numbers it makes. No postback or retry record is written
/// meanwhile, so the log up to its size at start is all there is to read.
final class PostbackRebuild: Sendable {
    /// Where the read starts and ends; nil when the start took everything from digests.
    let range: Range<Int>?
    private let take: @Sendable (RecordLog.RecordView) -> Void
    private let beforeReading: @Sendable () -> Void
    private let store: RecordLog
    private let done = DispatchGroup()
    private struct Progress {
        var ready: Bool
        var reached: Int
        var stopping = false
        var failed = false
    }
    private let progress: Locked<Progress>

    /// `range` nil: nothing to rebuild, ready from the start.
    init(store: RecordLog, range: Range<Int>?, take: @escaping @Sendable (RecordLog.RecordView) -> Void,
         beforeReading: @escaping @Sendable () -> Void = {}) {
        self.store = store
        self.beforeReading = beforeReading
        self.range = range.flatMap { $0.isEmpty ? nil : $0 }
        self.take = take
        progress = Locked(Progress(ready: self.range == nil, reached: self.range?.lowerBound ?? 0))
    }

    var isReady: Bool { progress.withLock { $0.ready } }

    /// The read failed: the postback paths stay refused until a restart.
    var failed: Bool { progress.withLock { $0.failed } }

    /// Between 0 and 1: how much of the range is read.
    var fraction: Double {
        guard let range else { return 1 }
        let reached = progress.withLock { $0.ready ? range.upperBound : $0.reached }
        return Double(reached - range.lowerBound) / Double(max(1, range.count))
    }

    /// What a request that needs the ledger is answered meanwhile.
    func refusal(_ what: String) -> Problem {
        guard !failed else {
            return Problem(status: 503, rule: "postbacks_rebuilding",
                           detail: "\(what) waits for the postback ledger, whose reading from the log failed (postback_rebuild_failed in the event log): the endpoint must be restarted; reports are being accepted meanwhile")
        }
        return Problem(status: 503, rule: "postbacks_rebuilding",
                       detail: "\(what) waits for the postback ledger, being read again from the log after a start found a digest it could not trust (\(Int(fraction * 100)) % done); reports are being accepted meanwhile")
    }

    /// Throws `refusal(what)` until the ledger is whole.
    func requireReady(_ what: String) throws {
        guard isReady else { throw refusal(what) }
    }

    /// Reads the range, then runs `then` (the threads that need the ledger whole: the postback
    /// window, retention, the digests), unless the endpoint stops first.
    func start(then: @escaping @Sendable () -> Void) {
        guard let range else { return then() }
        let (store, take, progress, beforeReading) = (self.store, self.take, self.progress, self.beforeReading)
        done.startThread(named: "postback-rebuild", priority: .background) {
            beforeReading()
            let started = Date()
            var records = 0
            let reached = store.scanEveryRecord(from: range.lowerBound, through: range.upperBound) { view in
                take(view)
                records &+= 1
                guard records & 0xFFFF == 0 else { return true }
                return progress.withLock { p in
                    p.reached = view.end
                    return !p.stopping
                }
            }
            let stopping = progress.withLock { $0.stopping }
            guard !stopping else { return }
            guard reached >= range.upperBound else {
                // A segment that cannot be read (EIO) would leave the ledger short of it: postbacks
                // stay refused, and devices keep them, rather than one counted twice. The threads
                // that need the ledger whole are not started; a restart reads it again.
                progress.withLock { $0.failed = true }
                EventLog.write("postback_rebuild_failed", ["from": .number(String(range.lowerBound)), "reached": .number(String(reached))])
                return
            }
            progress.withLock { $0.ready = true }
            EventLog.write("postback_rebuilt", ["seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started))),
                                                "bytes_read": .number(String(range.count)), "records": .number(String(records))])
            then()
        }
    }

    /// Stops a read still under way (the endpoint is stopping) and waits for its thread.
    func stop() {
        progress.withLock { $0.stopping = true }
        done.wait()
    }

    func waitUntilDone() {
        done.wait()
    }
}
