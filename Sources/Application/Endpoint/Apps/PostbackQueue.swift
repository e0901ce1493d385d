import Locking
import Postbacks
import Primitives
import HTTPServer
import RecordLog

/// Postbacks in arrival order, at most `capacity`, shared by the threads that check them and the
/// loop that takes them up: what ends a postback happens in this order, which keeps two copies of
/// one postback in the order they came.
final class PostbackQueue: Sendable {
    let capacity: Int
    private struct Entries {
        var entries: [QueuedPostback] = []
        /// The sequence number of `entries[0]`.
        var first: UInt64 = 0
        /// Checks handed to worker threads and not done yet.
        var checking = 0
        /// A worker has asked for a turn and the loop has not drained since: no need to again.
        var turnRequested = false
    }
    private let state = Locked(Entries())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Puts `item` at the end; its sequence number, or nil when the line is full.
    func append(_ item: QueuedPostback, checking: Bool) -> UInt64? {
        state.withLock { l -> UInt64? in
            guard l.entries.count < capacity else { return nil }
            l.entries.append(item)
            if checking { l.checking += 1 }
            return l.first + UInt64(l.entries.count - 1)
        }
    }

    /// A worker is done with `sequence`; true when the loop should be asked for a turn: the last
    /// check in flight is done, and none has asked since the last drain. (While postbacks keep
    /// arriving their requests turn the loop, which takes up what is done in passing; every
    /// extra turn would cost a flush of its own.)
    func checked(_ sequence: UInt64, reading: PostbackReading, check: PostbackKeyring.Check?, onDisk: PostbackLedger.LookedUp?) -> Bool {
        state.withLock { l -> Bool in
            let item = l.entries[Int(sequence - l.first)]
            item.reading = reading
            item.check = check
            item.onDisk = onDisk
            item.ready = true
            l.checking -= 1
            guard l.checking == 0, !l.turnRequested else { return false }
            l.turnRequested = true
            return true
        }
    }

    /// The first postback, taken off the line if `take` says so from whether it is ready.
    func takeFirst(_ take: (_ ready: Bool) -> Bool) -> QueuedPostback? {
        state.withLock { l -> QueuedPostback? in
            l.turnRequested = false
            guard let head = l.entries.first, take(head.ready) else { return nil }
            l.first += 1
            return l.entries.removeFirst()
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }
    var firstIsReady: Bool { state.withLock { $0.entries.first?.ready ?? false } }
}
