import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Log lines for a descriptor whose reader may stall: a pipe to a stuck log shipper, an overloaded
/// journald, a file on a disk busy flushing. A thread of its own does the writing, so a caller only
/// copies its bytes under a lock and never waits for the reader. When more than `capacity` bytes are
/// waiting, new lines are dropped and counted instead; once writing works again, one line says how
/// many were lost. A slow reader costs log lines, never the caller's progress.
public final class LineWriter: Sendable {
    /// The process's standard error, shared by everything that logs, so that lines never interleave.
    public static let standardError = LineWriter(fd: 2)

    private struct State {
        var pending: [UInt8] = []
        var dropped = 0
        /// Dropped since the last line that said so.
        var unreported = 0
        var stopping = false
    }
    private let fd: Int32
    private let capacity: Int
    private let state: Locked<State>
    /// Signalled when the first bytes arrive in an empty buffer, when the buffer fills past the
    /// point where waiting to batch is pointless, and at close.
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchGroup()
    /// How long the writer lets lines gather after the first one arrives: one write per batch
    /// instead of one per caller, and no wake-up per request under load.
    private let batchDelay: DispatchTimeInterval

    public init(fd: Int32, capacity: Int = 1 << 20, batchDelay: DispatchTimeInterval = .milliseconds(20)) {
        self.fd = fd
        self.capacity = capacity
        self.batchDelay = batchDelay
        self.state = Locked(State())
        stopped.startThread(named: "log-writer") { [self] in run() }
    }

    /// Queues `bytes`, which hold `lines` whole lines (each ending in a newline). Never blocks on
    /// the descriptor: if the buffer is full the lines are dropped and counted.
    public func enqueue(_ bytes: [UInt8], lines: Int) {
        guard !bytes.isEmpty else { return }
        let signal = state.withLock { s -> Bool in
            guard !s.stopping, s.pending.count + bytes.count <= capacity else {
                s.dropped += lines
                s.unreported += lines
                return false
            }
            let wasEmpty = s.pending.isEmpty
            s.pending.append(contentsOf: bytes)
            return wasEmpty || s.pending.count >= capacity / 2 && s.pending.count - bytes.count < capacity / 2
        }
        if signal { wake.signal() }
    }

    /// One line; a newline is added.
    public func writeLine(_ text: String) {
        enqueue(Array((text + "\n").utf8), lines: 1)
    }

    /// Lines dropped since start because the reader did not keep up.
    public var droppedLines: Int { state.withLock { $0.dropped } }

    /// Writes what is queued, waiting at most `timeout`, then stops taking lines. Returns false if
    /// the reader did not take everything in time; the writer thread is then left blocked in its
    /// write, and ends with the process.
    @discardableResult
    public func close(waitingAtMost timeout: Double) -> Bool {
        state.withLock { $0.stopping = true }
        wake.signal()
        return stopped.wait(timeout: .now() + timeout) == .success
    }

    private func run() {
        var batch: [UInt8] = []
        while true {
            wake.wait()
            // Let the neighbours of the first line join its write, unless the buffer is filling or
            // we are stopping: one write per batch, and no wake-up per request under load.
            _ = wake.wait(timeout: .now() + batchDelay)
            let (stopping, unreported) = state.withLock { s -> (Bool, Int) in
                swap(&s.pending, &batch)
                defer { s.unreported = 0 }
                return (s.stopping, s.unreported)
            }
            var lost = 0
            if !batch.isEmpty && !writeAll(batch) {
                // A closed or broken descriptor: these lines are lost like the dropped ones.
                lost = batch.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            }
            if lost == 0 && unreported > 0 {
                // After the lines that made it through, so the notice never displaces them.
                let notice = "{\"time\":\"\(HTTPDate.rfc3339Now())\",\"event\":\"log_lines_dropped\",\"lines\":\(unreported)}\n"
                if !writeAll(Array(notice.utf8)) { state.withLock { $0.unreported += unreported } }
            } else if lost > 0 || unreported > 0 {
                state.withLock { s in
                    s.dropped += lost
                    s.unreported += lost + unreported
                }
            }
            batch.removeAll(keepingCapacity: batch.capacity <= capacity)
            if stopping && state.withLock({ $0.pending.isEmpty }) { return }
        }
    }

    /// Blocking writes until every byte is out or the descriptor fails; true if all went out.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                // The descriptor's own write(2): blocking, on this thread only.
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }
}

