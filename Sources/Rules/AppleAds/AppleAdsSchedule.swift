/// When each pending token's next call to Apple is due, and whether calls are paused because
/// Apple's API is not answering. Pure: times in, token ids out.
///
/// - Calls come out by due time from a binary heap, so a backlog of any size costs a heap step
///   per call, not a scan per free call slot.
/// - One call that finds the API unavailable (no answer, 429, a 5xx) pauses every call, backing
///   off as `AppleAdsCallPolicy.backoff` does; when the pause ends a single call probes the API,
///   and only an answer from it resumes the rest. So an unreachable API costs one call, and one
///   log record, per pause, whatever the number of tokens waiting.
public struct AppleAdsSchedule: Sendable {
    public struct Pause: Sendable, Equatable {
        /// Milliseconds since the epoch when the next probe may go.
        public var until: Int64
        /// Probes in a row that found the API unavailable.
        public var failures: Int
    }

    private struct Due: Sendable {
        var at: Int64
        var id: UInt64
    }

    private var heap: [Due] = []
    public private(set) var pause: Pause?

    public init() {}

    /// Entries in the heap, stale ones included (they are dropped when they come up).
    public var scheduledCount: Int { heap.count }

    /// Notes that token `id` is next due at `at` (milliseconds since the epoch).
    public mutating func schedule(_ id: UInt64, at: Int64) {
        heap.append(Due(at: at, id: id))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].at < heap[parent].at else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The tokens to call now: due by `now`, while fewer than the limit are in flight (one, a
    /// probe, while the API is paused; none before the pause ends). `isCurrent(id, at)` says
    /// whether a heap entry still stands: the token is pending, not in flight, and due at `at`.
    public mutating func takeDue(now: Int64, inFlight: Int, maxInFlight: Int, isCurrent: (UInt64, Int64) -> Bool) -> [UInt64] {
        if let pause, now < pause.until { return [] }
        let limit = pause == nil ? maxInFlight : 1
        var taken: [UInt64] = []
        while inFlight + taken.count < limit, let top = heap.first, top.at <= now {
            popTop()
            if isCurrent(top.id, top.at) { taken.append(top.id) }
        }
        return taken
    }

    /// When a call may next be taken: the earliest entry, or the end of the pause if later; nil
    /// when nothing is scheduled, or when the calls in flight fill the limit (the answer of one
    /// of them is the next thing to wait for, not a time).
    public func nextWake(inFlight: Int, maxInFlight: Int) -> Int64? {
        guard let at = heap.first?.at, inFlight < (pause == nil ? maxInFlight : 1) else { return nil }
        return max(at, pause?.until ?? at)
    }

    /// What a call found: an unavailable API pauses calls (a failure during a pause already
    /// under way adds nothing: calls that were in flight when it began fail together); any
    /// answer ends the pause.
    public mutating func apiAnswered(unavailable: Bool, now: Int64) {
        guard unavailable else {
            pause = nil
            return
        }
        if let pause, now < pause.until { return }
        let failures = (pause?.failures ?? 0) + 1
        pause = Pause(until: now + AppleAdsCallPolicy.backoff(failures), failures: failures)
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].at < heap[smallest].at { smallest = left }
            if right < heap.count && heap[right].at < heap[smallest].at { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

extension AppleAdsCallPolicy {
    /// Whether an answer (or its absence) says the API itself is unavailable, rather than
    /// anything about the token: no answer, 429, a 5xx, or a 200 whose record cannot be read.
    public static func meansUnavailable(status: Int?, recordReadable: Bool) -> Bool {
        switch status {
        case nil, 429?, (500...599)?: true
        case 200?: !recordReadable
        default: false
        }
    }
}
