import Foundation
import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A consistent copy of a log that may be written meanwhile, taken from its files alone (the
/// process writing it is not asked): what `attribution-endpoint backup` copies the log with.
///
/// - The active segment is opened first. A roll after that renames the very file into `log/`, and
///   the copy goes on reading it through its descriptor, so the sealed segments taken are exactly
///   those before its base.
/// - Sealed segments are never written again: each is hard-linked (copied across file systems),
///   with its index.
/// - The active segment is copied up to its last whole record: the cut. A record acknowledged
///   before the copy began was flushed before its answer, so it is inside the cut. A record that
///   looked damaged in the copy is read again from the log (a write may have been under way
///   there), and only damage that is still there is kept, as the log itself has it.
public enum LogBackup {
    public struct Copied: Sendable {
        /// Where the copied log begins and ends (the cut), as log offsets.
        public var start: Int
        public var end: Int
        /// The files written, relative to the destination.
        public var files: [String]
        /// Of them, the sealed segments and indexes linked rather than copied.
        public var linked: Int
        /// The sealed segments' bases.
        public var sealedBases: [Int]
    }

    /// Copies the log in `directory` into `destination` (made if missing; its log files must not
    /// exist yet). `sealedBases` in the answer says which sealed segments were taken, so that what
    /// was derived from them (digests, key tables) can be taken beside them.
    public static func copy(from directory: String, to destination: String) throws(StoreError) -> Copied {
        let source = LogDirectory(directory: directory), target = LogDirectory(directory: destination)
        do {
            try FileManager.default.createDirectory(atPath: target.sealedDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError(operation: "make \(target.sealedDirectory)", errno: EIO)
        }
        var lastError = StoreError(operation: "copy the log of \(directory)", errno: EAGAIN)
        // Retention may remove a segment, or a roll seal one, between the steps: the next attempt
        // starts over, and the log moves on far more slowly than an attempt takes.
        for _ in 0..<20 {
            do throws(StoreError) {
                return try attempt(source, target)
            } catch {
                lastError = error
                removeCopied(target)
                if error.errno != ENOENT && error.errno != EAGAIN { throw error }
            }
        }
        throw lastError
    }

    private static func attempt(_ source: LogDirectory, _ target: LogDirectory) throws(StoreError) -> Copied {
        // While a roll's last rename is still to be made, the successor is the active segment.
        let activePath = FileManager.default.fileExists(atPath: source.activePath) ? source.activePath : source.nextPath
        let active = try LogFile.open(path: activePath, create: false, readOnly: true, followingLinks: false)
        defer { active.close() }
        let layout: SegmentLayout
        switch try SegmentHeader.read(active) {
        case .header(let header, let length): layout = SegmentLayout(base: header.base, dataStart: length)
        case .none where try active.size() > 0: layout = SegmentLayout(base: 0, dataStart: 0)
        case .none, .damaged:
            // A successor whose header is not written yet, or none at all: there is nothing in it.
            layout = SegmentLayout(base: -1, dataStart: 0)
        }
        var files: [String] = [], linked = 0
        let bases = try source.sealedBases().filter { layout.base < 0 || $0 < layout.base }
        var sealedEnd: Int?
        for base in bases {
            let file = try LogFile.open(path: source.sealedPath(base: base), create: false, readOnly: true, followingLinks: false)
            let size = try file.size()
            let header = try SegmentHeader.read(file)
            file.close()
            let dataStart: Int
            switch header {
            case .header(_, let length): dataStart = length
            case .none where base == 0: dataStart = 0
            case .none, .damaged: throw StoreError(operation: "read \(source.sealedPath(base: base)): no valid segment header", errno: EINVAL)
            }
            if let sealedEnd, sealedEnd != base { throw StoreError(operation: "list \(source.sealedDirectory): segments changed", errno: EAGAIN) }
            sealedEnd = base + size - dataStart
            for (from, to) in [(source.sealedPath(base: base), target.sealedPath(base: base)),
                               (source.indexPath(base: base), target.indexPath(base: base))] {
                let isIndex = from.hasSuffix(".index")
                guard !isIndex || FileManager.default.fileExists(atPath: from) else { continue }
                do throws(StoreError) {
                    if try linkOrCopy(from, to) { linked += 1 }
                } catch where isIndex && (error.errno == ENOENT || error.errno == EINVAL) {
                    continue  // an index is derived: the restored log's start writes it again
                }
                files.append(relative(to, target))
            }
        }
        // A roll between opening the active segment and listing `log/`: try again.
        if let sealedEnd, layout.base >= 0, sealedEnd != layout.base {
            throw StoreError(operation: "list \(source.sealedDirectory): segments changed", errno: EAGAIN)
        }
        for name in [source.startPath, source.restoresPath] where FileManager.default.fileExists(atPath: name) {
            let to = target.sealedDirectory + "/" + (name as NSString).lastPathComponent
            _ = try copyFile(name, to)
            files.append(relative(to, target))
        }
        let end = try copyActive(active, layout: layout, to: target.activePath, sealedEnd: sealedEnd ?? 0)
        files.append(relative(target.activePath, target))
        LogFile.syncDirectory(target.sealedDirectory)
        LogFile.syncDirectory(target.directory)
        return Copied(start: try source.start() > 0 ? try source.start() : (bases.first ?? max(layout.base, 0)), end: end,
                      files: files, linked: linked, sealedBases: bases)
    }

    /// The active segment up to its last whole record; returns the cut, a log offset.
    private static func copyActive(_ active: LogFile, layout: SegmentLayout, to path: String, sealedEnd: Int) throws(StoreError) -> Int {
        let copy = try LogFile.open(path: path, exclusive: true)
        defer { copy.close() }
        guard layout.base >= 0 else {
            try copy.sync()
            return sealedEnd
        }
        let size = try active.size()
        try copyRange(from: active, to: copy, range: 0..<size)
        var cut = layout.base
        for round in 0..<3 {
            let zerosFrom = try copy.endOfNonZeroBytes(size: size)
            let logEnd = layout.base + max(0, min(size, zerosFrom + LogRecord.headerSize + LogRecord.maxPayload) - layout.dataStart)
            var scanner = LogScanner(file: copy, layout: layout, end: logEnd)
            defer { scanner.deallocate() }
            var offset = layout.base
            var damaged: [Range<Int>] = []
            scan: while true {
                switch try scanner.step(at: offset) {
                case .record(let at, _, _, _, let size, _):
                    offset = at + size
                    cut = offset
                case .corrupt(let at, let length):
                    damaged.append(layout.fileOffset(at)..<layout.fileOffset(at + length))
                    offset = at + length
                case .tornTail, .end:
                    break scan
                }
            }
            // Bytes a write was still putting in place when they were copied: read them again.
            guard !damaged.isEmpty, round < 2 else { break }
            for range in damaged { try copyRange(from: active, to: copy, range: range) }
        }
        // A batch whose flush failed is cut off the log again by its writer (its senders were
        // answered 5xx), and the space after may be written again (zeros kept ahead, the next
        // batch): the copy's last bytes are compared with the log's once more, and taken again
        // if they differ. A batch is far smaller than what is compared.
        let tail = max(layout.dataStart, layout.fileOffset(cut) - Self.tailCompared)..<layout.fileOffset(cut)
        guard try active.size() >= tail.upperBound, try sameBytes(active, copy, tail) else {
            throw StoreError(operation: "copy \(active.path): the log was cut back while it was copied", errno: EAGAIN)
        }
        try copy.truncate(to: layout.fileOffset(cut))
        try copy.sync()
        return cut
    }

    /// How much of the copy's end is read again from the log, to find a batch cut back meanwhile.
    static let tailCompared = 8 << 20

    private static func sameBytes(_ a: LogFile, _ b: LogFile, _ range: Range<Int>) throws(StoreError) -> Bool {
        var left = [UInt8](repeating: 0, count: 1 << 20), right = left
        var at = range.lowerBound
        while at < range.upperBound {
            let want = min(left.count, range.upperBound - at)
            let got = try left.withUnsafeMutableBytes { raw in
                Result { () throws(StoreError) in try a.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]), at: at) }
            }.get()
            let other = try right.withUnsafeMutableBytes { raw in
                Result { () throws(StoreError) in try b.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]), at: at) }
            }.get()
            guard got == want, other == want, left[0..<want] == right[0..<want] else { return false }
            at += want
        }
        return true
    }

    private static func copyRange(from source: LogFile, to target: LogFile, range: Range<Int>) throws(StoreError) {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var at = range.lowerBound
        while at < range.upperBound {
            let want = min(buffer.count, range.upperBound - at)
            let got = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(StoreError) in try source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]), at: at) }
            }.get()
            guard got > 0 else { break }
            try buffer.withUnsafeBytes { raw in
                Result { () throws(StoreError) in try target.write(UnsafeRawBufferPointer(rebasing: raw[0..<got]), at: at) }
            }.get()
            at += got
        }
    }

    /// Hard-links `from` at `to`, or copies it where a link cannot be made (another file
    /// system); returns whether it linked.
    /// Only a regular file is taken (EINVAL otherwise): link(2) would take a symbolic link as it
    /// is, whose target a checksum then reads.
    @discardableResult
    public static func linkOrCopy(_ from: String, _ to: String) throws(StoreError) -> Bool {
        try requireRegularFile(from)
        if link(from, to) == 0 { return true }
        let error = errno
        guard error == EXDEV || error == EPERM || error == EMLINK else { throw StoreError(operation: "link \(from)", errno: error) }
        _ = try copyFile(from, to)
        return false
    }

    /// Throws unless `path` is a regular file itself (not followed if a link): ENOENT when it is
    /// not there, EINVAL when it is something else.
    public static func requireRegularFile(_ path: String) throws(StoreError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw StoreError(operation: "lstat \(path)", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError(operation: "take \(path): not a regular file", errno: EINVAL) }
    }

    /// Copies a file whole, flushed; returns its size.
    @discardableResult
    public static func copyFile(_ from: String, _ to: String) throws(StoreError) -> Int {
        let source = try LogFile.open(path: from, create: false, readOnly: true, followingLinks: false)
        defer { source.close() }
        let target = try LogFile.open(path: to, exclusive: true)
        defer { target.close() }
        let size = try source.size()
        try copyRange(from: source, to: target, range: 0..<size)
        try target.sync()
        return size
    }

    /// Takes away what an attempt that failed had put in place.
    private static func removeCopied(_ target: LogDirectory) {
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: target.sealedDirectory)) ?? [] {
            _ = unlink(target.sealedDirectory + "/" + name)
        }
        _ = unlink(target.activePath)
    }

    private static func relative(_ path: String, _ target: LogDirectory) -> String {
        String(path.dropFirst(target.directory.count + 1))
    }
}
