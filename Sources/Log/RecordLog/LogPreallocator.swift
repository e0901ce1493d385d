import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps zeros written and flushed ahead of the log's end, on a thread of its own.
///
/// A commit that appends past the end of the file makes its `fdatasync` also commit a new file
/// size and newly allocated blocks to the file system's journal; a commit that overwrites blocks
/// already written flushes only its data. On the benchmark machine's disk that is about 230 µs
/// against 140 µs per flush (`benchmarks/flush_latency.py`), and every report waits for one. Zeros are safe to leave
/// after the last record: a record never starts with a zero byte, and replay takes an all-zero
/// tail as free space, not as damage.
///
/// Nothing is preallocated on a disk with less than `reserve` free.
///
/// The one rule that matters: zeros are never written where a commit has written or is writing.
/// A commit claims its range first (`claim`), and the thread only zeroes above every claim.
final class LogPreallocator: @unchecked Sendable {
    private let file: LogFile
    /// How far ahead of the last claim zeros are kept; more are written when less than half is left.
    let window: Int
    /// Zeros are written and flushed this much at a time, so that a commit's flush never has more
    /// than one piece of them to wait for.
    static let piece = 256 << 10
    private static let zeros = [UInt8](repeating: 0, count: piece)
    /// Called on the thread just before it writes a piece; tests use it to hold the thread there.
    private let willWrite: (@Sendable (Range<Int>) -> Void)?

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    /// Every byte below this is on disk: records or zeros.
    private var zeroedEnd: Int
    /// Commits have written, or are writing, every byte they need below this.
    private var claimedEnd: Int
    /// What the thread is zeroing right now.
    private var zeroing: Range<Int>?
    /// After a failed write, or with too little room on the disk, the thread waits until then
    /// before it looks again.
    private var retryAt: Date?
    /// Set when less than half the window is left, until the whole window is zeroed again.
    private var filling = false
    /// Counts `cutBack` calls, so the thread knows whether the file changed under its write.
    private var cutBacks = 0
    private var stopping = false
    private let stopped = DispatchGroup()

    init(file: LogFile, window: Int, dataEnd: Int, zeroedEnd: Int, willWrite: (@Sendable (Range<Int>) -> Void)? = nil) {
        self.file = file
        self.window = window
        self.willWrite = willWrite
        self.claimedEnd = dataEnd
        self.zeroedEnd = max(zeroedEnd, dataEnd)
        stopped.startThread(named: "log-preallocator") { [self] in run() }
    }

    /// Called by a commit before it writes `range`, which starts at the end of the data: waits
    /// while the thread is zeroing any of it (only when the zeros ran out), then owns it.
    func claim(_ range: Range<Int>) {
        condition.lock()
        while let busy = zeroing, busy.overlaps(range) { condition.wait() }
        claimedEnd = range.upperBound
        if zeroing == nil && zeroedEnd - claimedEnd < window / 2 { condition.broadcast() }
        condition.unlock()
    }

    /// A failed commit cut the file back to `end`: the data ends there again, and the zeros after
    /// it are gone.
    func cutBack(to end: Int) {
        condition.lock()
        claimedEnd = end
        zeroedEnd = end
        cutBacks += 1
        condition.unlock()
    }

    /// Waits until every byte of the file below `fileOffset` is on disk, records or zeros, or
    /// `seconds` pass: each piece the thread writes wakes it (tests wait on it).
    func waitUntilZeroed(through fileOffset: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while zeroedEnd < fileOffset {
            guard condition.wait(until: deadline) else { return zeroedEnd >= fileOffset }
        }
        return true
    }

    /// Waits for the piece being written, if any, and stops the thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        stopped.wait()
    }

    private func run() {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while !stopping && !needsZeros() {
                if let retryAt { _ = condition.wait(until: retryAt) } else { condition.wait() }
            }
            if stopping { return }
            guard roomToSpare() else {
                retryAt = Date().addingTimeInterval(1)
                continue
            }
            let start = max(zeroedEnd, claimedEnd)
            let end = min(start + Self.piece, claimedEnd + window)
            zeroing = start..<end
            let cutBacksBefore = cutBacks
            condition.unlock()
            willWrite?(start..<end)
            var written = true
            do {
                try Self.zeros.withUnsafeBytes { zeros in
                    Result { () throws(StoreError) in
                        try file.write(UnsafeRawBufferPointer(rebasing: zeros[0..<(end - start)]), at: start)
                    }
                }.get()
                try file.sync()
            } catch {
                written = false  // whatever part got written is zeros after the data: harmless
            }
            condition.lock()
            zeroing = nil
            if written {
                // Unless a failed commit cut the file back meanwhile: then these zeros may sit after
                // a hole (which reads as zeros too), and the next piece starts again at the data.
                if cutBacks == cutBacksBefore { zeroedEnd = end }
                retryAt = nil
            } else {
                retryAt = Date().addingTimeInterval(1)
            }
            condition.broadcast()
        }
    }

    /// Zeros are only worth it while the disk has plenty of room: they must never be what fills
    /// it, leaving no space for the registry file or the next start. This much stays free.
    var reserve: Int { max(64 << 20, 4 * window) }

    private func roomToSpare() -> Bool {
        var fs = statvfs()
        guard fstatvfs(file.fd, &fs) == 0 else { return false }
        return Int(fs.f_bavail) * Int(fs.f_frsize) - Self.piece >= reserve
    }

    /// Once less than half the window is left, pieces are written until all of it is there again.
    private func needsZeros() -> Bool {
        if let retryAt {
            if Date() < retryAt { return false }
            self.retryAt = nil  // or the wait below would return at once, again and again
        }
        if zeroedEnd - claimedEnd < window / 2 { filling = true }
        if zeroedEnd >= claimedEnd + window { filling = false }
        return filling
    }
}
