import Foundation
import Locking
import Primitives

/// The active segment sealed and its successor begun, by size or UTC day, on the committing thread.
extension RecordLog {
    /// The active segment, as the committing thread writes it.
    struct Writer {
        var segment: SegmentFile?
        var layout: SegmentLayout
        /// Keeps zeros written ahead of the data, when the store was opened with a preallocation.
        var preallocator: LogPreallocator?
        /// After a roll failed (disk full), the active segment takes batches until then.
        var noRollUntil: UInt64 = 0
        /// Failed rolls in a row, for the pause before the next try.
        var rollFailures = 0
        /// The successor is written under `reports.log.next`: its rename is still to be made.
        var renamePending = false
    }

    /// Whether the batch about to be written starts a new segment: the active one has records,
    /// and the batch would take it past its size, or begins a UTC day its first record did not.
    /// Never while a roll's last rename is still to be made, nor during a failed roll's pause.
    func needsRoll(_ writer: inout Writer, end: Int, adding size: Int, firstTime: Int64) -> Bool {
        if writer.renamePending {
            guard rename(files.nextPath, files.activePath) == 0 else { return false }
            LogFile.syncDirectory(directory)
            writer.renamePending = false
            state.withLock { s in s.segments[s.segments.count - 1].path = files.activePath }
        }
        guard end > writer.layout.base, DispatchTime.now().uptimeNanoseconds >= writer.noRollUntil else { return false }
        if end - writer.layout.base + size > policy.maxBytes { return true }
        guard policy.rollsDaily, let segmentFirst = state.withLock({ $0.segments.last?.firstTime }) else { return false }
        return SegmentPolicy.day(of: firstTime) != SegmentPolicy.day(of: segmentFirst)
    }

    /// Seals the active segment, which ends at `end`, and begins its successor there:
    /// 1. the successor is made as `reports.log.next`, exclusively (a file of that name left by
    ///    anything else is never reused), with its header, flushed;
    /// 2. the zeros kept ahead of the old segment are cut, so that it ends with its last record;
    /// 3. `reports.log` is renamed into `log/`, then the successor to `reports.log` (should that
    ///    last rename fail, the successor is written under its temporary name and the rename is
    ///    tried again before each batch; a start finishes it too);
    /// 4. the sealed segment's index is written off the committing thread (a start without it
    ///    reads the segment instead).
    /// A roll that fails before step 3 leaves the active segment as it was, taking batches, and is
    /// tried again after a pause that doubles up to five minutes (`rollFailures` counts them).
    func roll(_ writer: inout Writer, at end: Int) {
        guard let old = writer.segment else { return }
        let (tally, header, sealed) = state.withLock { s -> (SegmentTally, SegmentHeader, SegmentIndex) in
            var replay = LogReplay()
            replay.end = s.end
            replay.prefix = s.prefix
            replay.nextIDs = s.nextIDs
            replay.lastTime = s.lastTime
            replay.indexes = s.indexes
            replay.counts = s.counts
            let tally = s.segments[s.segments.count - 1]
            return (tally, replay.header(), replay.index(of: tally, fileSize: writer.layout.fileOffset(end)))
        }
        let base = tally.layout.base
        let successor: LogFile
        let headerBytes = header.encoded()
        do {
            try FileManager.default.createDirectory(atPath: files.sealedDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            successor = try LogFile.open(path: files.nextPath, exclusive: true)
        } catch {
            return rollFailed(&writer, error)
        }
        do {
            try successor.write(headerBytes, at: 0)
            try successor.sync()
            writer.preallocator?.stop()
            writer.preallocator = nil
            try old.file.truncate(to: writer.layout.fileOffset(end))
            try old.file.sync()
            guard rename(files.activePath, files.sealedPath(base: base)) == 0 else {
                throw StoreError(operation: "rename \(files.activePath)", errno: errno)
            }
        } catch {
            // This attempt made the successor and nothing took its place: it goes.
            successor.close()
            _ = unlink(files.nextPath)
            startPreallocator(&writer, dataEnd: end)
            return rollFailed(&writer, error)
        }
        writer.renamePending = rename(files.nextPath, files.activePath) != 0
        LogFile.syncDirectory(files.sealedDirectory)
        LogFile.syncDirectory(directory)
        let segment = SegmentFile(successor)
        let layout = SegmentLayout(base: end, dataStart: headerBytes.count)
        let activePath = writer.renamePending ? files.nextPath : files.activePath
        state.withLock { s in
            let active = s.segments.count - 1
            s.segments[active].file = nil
            s.segments[active].path = files.sealedPath(base: base)
            s.segments.append(SegmentTally(layout: layout, path: activePath, end: end, file: segment))
        }
        writer.segment = segment
        writer.layout = layout
        writer.rollFailures = 0
        startPreallocator(&writer, dataEnd: end)
        let (indexPath, bytes) = (files.indexPath(base: base), sealed.encoded())
        indexWriter.async { try? LogFile.replaceWhole(path: indexPath, with: bytes) }
    }

    func startPreallocator(_ writer: inout Writer, dataEnd end: Int) {
        guard preallocation > 0, writer.preallocator == nil, let segment = writer.segment else { return }
        let dataEnd = writer.layout.fileOffset(end)
        writer.preallocator = LogPreallocator(file: segment.file, window: preallocation, dataEnd: dataEnd,
                                              zeroedEnd: (try? segment.file.size()) ?? dataEnd)
    }

    func rollFailed(_ writer: inout Writer, _ error: any Error) {
        writer.rollFailures += 1
        let pause = min(UInt64(300), UInt64(1) << UInt64(min(writer.rollFailures - 1, 9)))
        writer.noRollUntil = DispatchTime.now().uptimeNanoseconds + pause * 1_000_000_000
        let text = "\(error)"
        state.withLock { s in
            s.rollFailures += 1
            s.lastRollError = text
        }
    }

}
