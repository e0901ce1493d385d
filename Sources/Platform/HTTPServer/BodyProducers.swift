import Dispatch
import Locking

/// The threads that make streamed bodies (`BackgroundBodyStream`): an export's scan of the log
/// runs here, in Linux's SCHED_IDLE class by default, so that no report waits behind a read. A
/// nice value is not enough: Linux's EEVDF scheduler lets a running thread finish its slice (up
/// to a few milliseconds) before a woken one of any priority takes the core, and under a steady
/// scan the loop and the log's flush thread waited up to 5 ms for it (docs/PERFORMANCE.md). An
/// idle-class thread gives the core up the moment another wakes.
///
/// A thread makes one piece of one stream, then takes the next stream waiting: every open stream
/// moves, and a stream whose client does not read is not scheduled at all. At most `maxStreams`
/// are open at once; past that `stream` answers nil and the caller refuses with a 503.
public final class BodyProducers: Sendable {
    private struct State {
        var waiting: [BackgroundBodyStream] = []
        var open = 0
        var stopping = false
    }
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let threads = DispatchGroup()
    /// Entered for each stream scheduled, left once its piece is made: `waitUntilIdle`.
    private let scheduled = DispatchGroup()
    public let maxStreams: Int
    public let pieceBytes: Int

    /// Threads named `name-0`, `name-1`, … as `top -H` shows them.
    public init(named name: String, threads count: Int, maxStreams: Int, pieceBytes: Int = 48 << 10,
                priority: ThreadPriority = .idle) {
        self.maxStreams = max(1, maxStreams)
        self.pieceBytes = pieceBytes
        for n in 0..<max(1, count) {
            threads.startThread(named: "\(name)-\(n)", priority: priority) { [self] in run() }
        }
    }

    /// A stream whose pieces `produce` makes once its connection begins sending it; nil when
    /// `maxStreams` streams are open or the producers stop.
    public func stream(_ produce: @escaping BackgroundBodyStream.Produce) -> BackgroundBodyStream? {
        let admitted = state.withLock { s -> Bool in
            guard !s.stopping, s.open < maxStreams else { return false }
            s.open += 1
            return true
        }
        guard admitted else { return nil }
        return BackgroundBodyStream(producers: self, pieceBytes: pieceBytes, produce: produce)
    }

    /// Streams open: made and neither ended, cancelled nor dropped.
    public var openStreams: Int { state.withLock { $0.open } }

    func schedule(_ stream: BackgroundBodyStream) {
        scheduled.enter()
        let taken = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.waiting.append(stream)
            return true
        }
        if taken { available.signal() } else { scheduled.leave() }
    }

    /// Waits until no stream is waiting for a thread or being made: every open stream then waits
    /// on its client (for tests).
    public func waitUntilIdle() {
        scheduled.wait()
    }

    func released() {
        state.withLock { $0.open -= 1 }
    }

    /// Stops the threads once each has finished its piece; streams still open are cancelled.
    public func stop() {
        let dropped = state.withLock { s -> [BackgroundBodyStream] in
            s.stopping = true
            defer { s.waiting.removeAll() }
            return s.waiting
        }
        for stream in dropped {
            stream.cancel()
            scheduled.leave()
        }
        available.signal()
        threads.wait()
    }

    private func produceOnce(_ stream: BackgroundBodyStream) {
        if stream.produceOnce() { schedule(stream) }
    }

    private func run() {
        while true {
            available.wait()
            var (stream, stopping) = state.withLock { s -> (BackgroundBodyStream?, Bool) in
                (s.waiting.isEmpty ? nil : s.waiting.removeFirst(), s.stopping)
            }
            if stopping {
                available.signal()  // the next thread sees it too
                return
            }
            guard stream != nil else { continue }
            produceOnce(stream!)
            // Let go before saying so: a stream nobody else holds ends here, not after the wait.
            stream = nil
            scheduled.leave()
        }
    }
}
