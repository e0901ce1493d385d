import DurableFiles
import Foundation
import Primitives
import RecordLog

/// `attribution-endpoint backup DEST [--data DIR] [--config FILE]`: a consistent copy of a data
/// directory, taken while the node runs (or not), with a manifest of every file's SHA-256.
///
/// The order is what makes it consistent:
/// 1. every file but the log's is copied first: the registries and keys, and the positions the
///    export, the relays and the summary's checkpoint have reached in the log;
/// 2. then the log (`LogBackup`): sealed segments hard-linked, the active one cut after its last
///    whole record. So no position copied in step 1 is past the cut, and every report answered
///    before the backup began is inside it;
/// 3. what was derived from each sealed segment taken (its digest and postback key table), linked,
///    so that the restored node starts as fast as this one did; anything derived and missing is
///    rebuilt by the start;
/// 4. the manifest, written last: a folder without one is a backup that did not finish (and says
///    so: `backup-incomplete` is written first and removed after the manifest).
///
/// Only regular files and folders are copied: a symbolic link, a pipe or a device in the data
/// directory is left out and named (a link there must not make a backup run as root copy what it
/// points at).
public enum BackupCommand {
    static let usage = """
        usage: attribution-endpoint backup DEST [--data DIR] [--config FILE]

        Copies the data directory DIR (or the config file's "data") into DEST, which must not
        exist or be empty, while the endpoint runs: the log's sealed segments as hard links where
        DEST is on the same file system (copies elsewhere), the segment being written up to its
        last whole record, every other file as it is, and DEST/backup-manifest.json with each
        file's SHA-256. Every report answered before the command began is in it. Restore it with
        `attribution-endpoint restore DEST --data DIR`, or start the endpoint with --data DEST.
        DEST holds the sites' private token keys and the admin token: keep it as you keep DIR.
        """ + EndpointConfiguration.sharedOptionsHelp(["--data", "--config"])

    /// Files of the data directory a backup leaves out: the log (copied its own way), what is
    /// derived and rebuilt by a start, and what only a running process uses.
    static let logEntries: Set<String> = ["reports.log", "reports.log.next", "log"]
    static let derivedFolders: Set<String> = ["digests", "postback-keys", "segment-sites"]
    static func isTransient(_ name: String) -> Bool {
        name.hasSuffix(".lock") || name.hasSuffix(".tmp") || name == BackupManifest.fileName || name == incompleteName
            // What the node was restored from: its own history, which a restore of this backup
            // writes anew (its restores are in log/RESTORES, copied with the log).
            || name == BackupManifest.restoredName
    }
    /// In a backup's folder until its manifest is written: a start or a restore refuses it.
    static let incompleteName = "backup-incomplete"

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        let (destination, directory): (String, String)
        switch BackupArguments.parse(arguments, command: "backup", folderRole: "the folder to write the backup to") {
        case .help: print(usage); return 0
        case .refused(let reason): return fail(reason)
        case .run(let given): (destination, directory) = (given.folder, given.dataDirectory)
        }
        do {
            let started = Date()
            var skipped: [String] = []
            let manifest = try backUp(directory, to: destination, at: EndpointClock.systemNow(), skipped: &skipped)
            for path in skipped {
                FileHandle.standardError.write(Data("attribution-endpoint backup: left out \(directory)/\(path): not a regular file or folder\n".utf8))
            }
            let seconds = Date().timeIntervalSince(started)
            let bytes = manifest.files.reduce(0) { $0 + $1.bytes }
            var fields: [(String, JSONValue)] = [("destination", .string(destination)), ("data", .string(directory))]
            fields.append(("files", .number(String(manifest.files.count))))
            fields.append(("bytes", .number(String(bytes))))
            fields.append(("log_start", .number(String(manifest.log.start))))
            fields.append(("log_end", .number(String(manifest.log.end))))
            fields.append(("node", manifest.node.map { .string($0) } ?? .null))
            fields.append(("left_out", .array(skipped.map { .string($0) })))
            fields.append(("seconds", .number(String(format: "%.3f", seconds))))
            print(EventLog.line("backup", fields))
            return 0
        } catch {
            return fail("\(error)")
        }
    }

    /// Backs `directory` up into `destination`; returns the manifest written.
    @discardableResult
    static func backUp(_ directory: String, to destination: String, at now: Timestamp) throws(BackupError) -> BackupManifest {
        var skipped: [String] = []
        return try backUp(directory, to: destination, at: now, skipped: &skipped)
    }

    /// `skipped`: what was left out, not being a regular file or folder.
    static func backUp(_ directory: String, to destination: String, at now: Timestamp, skipped: inout [String]) throws(BackupError) -> BackupManifest {
        let fm = FileManager.default
        var isFolder: ObjCBool = false
        guard fm.fileExists(atPath: directory, isDirectory: &isFolder), isFolder.boolValue,
              fm.fileExists(atPath: directory + "/reports.log") || fm.fileExists(atPath: directory + "/reports.log.next") else {
            throw BackupError("\(directory) holds no log: name the endpoint's data directory with --data or --config")
        }
        if fm.fileExists(atPath: destination) {
            guard ((try? fm.contentsOfDirectory(atPath: destination)) ?? ["?"]).isEmpty else {
                throw BackupError("\(destination) exists and is not an empty folder: name a new one")
            }
        }
        // Inside the data directory, the backup would copy itself into itself. Compared once DEST
        // exists, so that every link on the way to it is resolved.
        let existed = fm.fileExists(atPath: destination)
        try makeFolder(destination)
        guard let data = realPath(directory), let target = realPath(destination), target != data, !target.hasPrefix(data + "/") else {
            if !existed { _ = rmdir(destination) }
            throw BackupError("\(destination) is inside the data directory \(directory): name a folder outside it")
        }
        do {
            try DurableFile.replace(path: destination + "/" + incompleteName,
                                    with: Array("a backup of \(directory) under way since \(now.rfc3339), or cut short: not to be restored\n".utf8))
        } catch {
            throw BackupError("cannot write \(destination)/\(incompleteName): \(error)")
        }
        var paths: [String] = []
        try copyState(directory, "", to: destination, into: &paths, skipped: &skipped)
        let copied: LogBackup.Copied
        do {
            copied = try LogBackup.copy(from: directory, to: destination)
        } catch {
            throw BackupError("cannot copy the log: \(error)")
        }
        paths += copied.files
        // The digests of segments retention removed stay: they alone keep the Apps view's days
        // from before the oldest segment kept.
        let removedDigests = ((try? fm.contentsOfDirectory(atPath: directory + "/digests")) ?? []).compactMap { name -> Int? in
            guard name.hasSuffix(".digest"), let base = Int(name.dropLast(7)) else { return nil }
            return base < (copied.sealedBases.first ?? copied.end) ? base : nil
        }
        for (folder, suffix, bases) in [("digests", ".digest", removedDigests + copied.sealedBases), ("postback-keys", ".keys", copied.sealedBases)] {
            for base in bases {
                let name = "\(folder)/\(base)\(suffix)"
                guard fm.fileExists(atPath: directory + "/" + name) else { continue }
                try makeFolder(destination + "/" + folder)
                do {
                    try LogBackup.linkOrCopy(directory + "/" + name, destination + "/" + name)
                    paths.append(name)
                } catch where error.errno == ENOENT {
                    continue  // removed with its segment by retention meanwhile: derived, rebuilt at start
                } catch where error.errno == EINVAL {
                    skipped.append(name)  // not a regular file: derived, rebuilt at start
                    continue
                } catch {
                    throw BackupError("cannot copy \(name): \(error)")
                }
            }
        }
        let manifest = try BackupManifest.make(directory: destination, paths: paths, source: directory, node: cursorNode(destination),
                                               log: .init(start: copied.start, end: copied.end), at: now)
        try manifest.save(in: destination)
        _ = unlink(destination + "/" + incompleteName)
        return manifest
    }

    /// Copies every file under `directory/relative` but the log's, the derived folders and the
    /// transient files, adding their paths (relative to the data directory) to `paths`.
    private static func copyState(_ directory: String, _ relative: String, to destination: String, into paths: inout [String],
                                  skipped: inout [String]) throws(BackupError) {
        let fm = FileManager.default
        let here = relative.isEmpty ? directory : directory + "/" + relative
        let names: [String]
        do { names = try fm.contentsOfDirectory(atPath: here).sorted() } catch { throw BackupError("cannot list \(here): \(error)") }
        for name in names {
            let path = relative.isEmpty ? name : relative + "/" + name
            if relative.isEmpty && (logEntries.contains(name) || derivedFolders.contains(name)) { continue }
            if isTransient(name) { continue }
            // Not followed: a link's own type (lstat).
            guard let type = (try? fm.attributesOfItem(atPath: here + "/" + name))?[.type] as? FileAttributeType else { continue }  // removed meanwhile
            if type == .typeDirectory {
                try makeFolder(destination + "/" + path)
                try copyState(directory, path, to: destination, into: &paths, skipped: &skipped)
                continue
            }
            guard type == .typeRegular else {
                skipped.append(path)
                continue
            }
            do {
                try LogBackup.copyFile(directory + "/" + path, destination + "/" + path)
                paths.append(path)
            } catch where error.errno == ENOENT {
                continue  // a file removed meanwhile (a development postback let go of) was not there to copy
            } catch {
                throw BackupError("cannot copy \(path): \(error)")
            }
        }
    }

    /// The node the export's or a relay's cursor names, as copied into `destination`.
    private static func cursorNode(_ destination: String) -> String? {
        var files = [destination + "/clickhouse-export.json"]
        files += ((try? FileManager.default.contentsOfDirectory(atPath: destination + "/relays")) ?? []).sorted().map { destination + "/relays/" + $0 }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let node = object["node"] as? String else { continue }
            return node
        }
        return nil
    }

    /// The path of an existing file with every link resolved (realpath(3)).
    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func makeFolder(_ path: String) throws(BackupError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw BackupError("cannot make \(path): \(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint backup: \(message)\n".utf8))
        return 1
    }
}
