import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct StoreError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32

    public init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
    /// Out of space (or quota): the condition an operator can fix by freeing disk.
    public var isDiskFull: Bool { errno == ENOSPC || errno == EDQUOT }
}

/// The log file's system calls: positioned reads and writes and a real flush to the medium.
struct LogFile: @unchecked Sendable {
    let fd: Int32
    let path: String

    /// `exclusive`: create it, failing if a file of that name exists. `readOnly`: for a sealed
    /// segment, which is never written again (and may sit on a read-only mount).
    /// `followingLinks: false`: a symbolic link is refused (ELOOP), as a backup refuses to copy
    /// what a link points at.
    static func open(path: String, create: Bool = true, exclusive: Bool = false, readOnly: Bool = false,
                     followingLinks: Bool = true) throws(StoreError) -> LogFile {
        let flags = (readOnly ? O_RDONLY : O_RDWR) | (create ? O_CREAT : 0) | (exclusive ? O_CREAT | O_EXCL : 0) | O_CLOEXEC
            | (followingLinks ? 0 : O_NOFOLLOW)
        let fd = systemOpen(path, flags, 0o600)
        guard fd >= 0 else { throw StoreError(operation: "open \(path)", errno: errno) }
        return LogFile(fd: fd, path: path)
    }

    func size() throws(StoreError) -> Int {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw StoreError(operation: "fstat", errno: errno) }
        return Int(st.st_size)
    }

    /// Reads up to `count` bytes at `offset` into `buffer`, returning how many were read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(StoreError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError(operation: "pread", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func write(_ bytes: [UInt8], at offset: Int) throws(StoreError) {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(StoreError) in try write(buffer, at: offset) }
        }.get()
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError(operation: "pwrite", errno: errno)
            }
            done += n
        }
    }

    /// Waits until written bytes are on the medium: fdatasync on Linux, F_FULLFSYNC on macOS
    /// (whose fsync only reaches the drive's cache).
    func sync() throws(StoreError) {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return }
        guard fsync(fd) == 0 else { throw StoreError(operation: "fsync", errno: errno) }
        #else
        guard fdatasync(fd) == 0 else { throw StoreError(operation: "fdatasync", errno: errno) }
        #endif
    }

    /// The offset just after the last byte that is not zero (0 for an empty or all-zero file),
    /// read backwards from the end.
    func endOfNonZeroBytes(size: Int) throws(StoreError) -> Int {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var end = size
        while end > 0 {
            let start = max(0, end - buffer.count)
            let got = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(StoreError) in
                    try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<(end - start)]), at: start)
                }
            }.get()
            if let last = buffer[0..<got].lastIndex(where: { $0 != 0 }) { return start + last + 1 }
            end = start
        }
        return 0
    }

    func truncate(to length: Int) throws(StoreError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw StoreError(operation: "ftruncate", errno: errno) }
    }

    func close() { _ = systemClose(fd) }

    /// Replaces the file at `path` with `bytes` so that a crash leaves the old file or the new:
    /// written to a temporary file, flushed, renamed over, the directory flushed.
    static func replaceWhole(path: String, with bytes: [UInt8]) throws(StoreError) {
        let temporary = path + ".tmp"
        let file = try open(path: temporary)
        defer { file.close() }
        do throws(StoreError) {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            guard rename(temporary, path) == 0 else { throw StoreError(operation: "rename \(temporary)", errno: errno) }
        } catch {
            _ = unlink(temporary)
            throw error
        }
        syncDirectory(path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ".")
    }

    /// Makes a newly created file's directory entry durable too.
    static func syncDirectory(_ path: String) {
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC, 0)
        guard fd >= 0 else { return }
        fsync(fd)
        _ = systemClose(fd)
    }
}

private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    #if canImport(Glibc)
    return Glibc.open(path, flags, mode)
    #else
    return Darwin.open(path, flags, mode)
    #endif
}

private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    return Glibc.close(fd)
    #else
    return Darwin.close(fd)
    #endif
}

/// Walks the records of a byte range of one segment, resynchronising past damage.
///
/// Damage followed by a valid record is a corrupt record in the middle: it is skipped and
/// reported. Damage with no valid record after it is a torn tail: the walk ends there.
struct LogScanner {
    let file: LogFile
    /// Offsets are the log's; the file holds offset `o` at `o + shift` (a segment's header and base).
    let shift: Int
    let end: Int
    private var buffer: UnsafeMutableRawBufferPointer
    private var bufferStart = 0
    private var bufferEnd = 0

    static let window = 1 << 20

    init(file: LogFile, layout: SegmentLayout = SegmentLayout(base: 0, dataStart: 0), end: Int) {
        self.file = file
        self.shift = layout.dataStart - layout.base
        self.end = end
        buffer = .allocate(byteCount: Self.window + LogRecord.headerSize + LogRecord.maxPayload, alignment: 8)
    }

    func deallocate() { buffer.deallocate() }

    enum Step {
        case record(offset: Int, kind: UInt8, tag: UInt8, payload: UnsafeRawBufferPointer, size: Int, checksum: UInt32)
        case corrupt(offset: Int, length: Int)
        case tornTail(offset: Int)
        case end
    }

    /// The next step from `offset`. The payload is valid until the next call.
    mutating func step(at offset: Int) throws(StoreError) -> Step {
        guard offset < end else { return .end }
        switch try decode(at: offset) {
        case .record(let kind, let tag, let payload, let size):
            // The header sits just before the payload in the buffer; its last field is the checksum.
            let checksum = UnsafeRawBufferPointer(start: payload.baseAddress! - 4, count: 4).loadLE(UInt32.self, at: 0)
            return .record(offset: offset, kind: kind, tag: tag, payload: payload, size: size, checksum: checksum)
        case .incomplete, .corrupt:
            var candidate = offset + 1
            while candidate + LogRecord.headerSize <= end {
                if case .record = try decode(at: candidate) {
                    return .corrupt(offset: offset, length: candidate - offset)
                }
                candidate += 1
            }
            return .tornTail(offset: offset)
        }
    }

    private mutating func decode(at offset: Int) throws(StoreError) -> LogRecord.Decoded {
        // Keep a whole maximum-size record available from `offset`, unless the range ends first.
        let wanted = min(end, offset + LogRecord.headerSize + LogRecord.maxPayload)
        if offset < bufferStart || wanted > bufferEnd {
            let count = min(buffer.count, end - offset)
            let got = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]), at: offset + shift)
            bufferStart = offset
            bufferEnd = offset + got
        }
        let available = UnsafeRawBufferPointer(rebasing: buffer[(offset - bufferStart)..<(bufferEnd - bufferStart)])
        return LogRecord.decode(available)
    }
}
