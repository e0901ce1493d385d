import Foundation
import Primitives
import RecordLog

/// `attribution-endpoint restore BACKUP [--data DIR] [--config FILE]`: a backup made the node's
/// data directory. The backup is checked against its manifest where it is, then its files are
/// copied (the sealed segments and what was derived from them linked, where on the same file
/// system: they are never written) and taken (`RestoredData`). The backup is left as it is.
public enum RestoreCommand {
    static let usage = """
        usage: attribution-endpoint restore BACKUP [--data DIR] [--config FILE]

        Makes the backup in BACKUP (see backup --help) the data directory DIR (or the config
        file's "data"), which must not exist or be empty: stop the endpoint and move the damaged
        folder aside first. Every file is checked against BACKUP/backup-manifest.json; one that
        differs stops the restore, naming it. The restored log gives new records ids above any
        the lost node can have given, so that ClickHouse and relays never get two records under
        one id; the export and the relays go on from where the backup's cursors were, sending
        again what followed (under the same ids: ClickHouse keeps one row, a relay's receiver
        sees the same delivery id). Starting the endpoint with --data BACKUP does the same in
        place.
        """ + EndpointConfiguration.sharedOptionsHelp(["--data", "--config"])

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        let (backup, directory): (String, String)
        switch BackupArguments.parse(arguments, command: "restore", folderRole: "the backup's folder") {
        case .help: print(usage); return 0
        case .refused(let reason): return fail(reason)
        case .run(let given): (backup, directory) = (given.folder, given.dataDirectory)
        }
        do {
            let manifest = try restore(backup, into: directory, at: EndpointClock.systemNow())
            var fields: [(String, JSONValue)] = [("backup", .string(backup)), ("data", .string(directory))]
            fields.append(("backup_created_at", .string(manifest.createdAt.rfc3339)))
            fields.append(("node", manifest.node.map { .string($0) } ?? .null))
            fields.append(("files", .number(String(manifest.files.count))))
            fields.append(("log_end", .number(String(manifest.log.end))))
            fields.append(("id_floor", .number(String(manifest.idFloor ?? 0))))
            print(EventLog.line("restore", fields))
            return 0
        } catch {
            return fail("\(error)")
        }
    }

    /// Copies the backup in `backup` into `directory`, then checks and takes it there.
    @discardableResult
    static func restore(_ backup: String, into directory: String, at now: Timestamp) throws(BackupError) -> BackupManifest {
        let manifest = try BackupManifest.load(from: backup)
        // Checked where it is, before anything is written: a bad backup leaves DIR untouched.
        try RestoredData.check(manifest, in: backup)
        try RestoredData.checkClock(now, against: manifest)
        let fm = FileManager.default
        if fm.fileExists(atPath: directory) {
            guard ((try? fm.contentsOfDirectory(atPath: directory)) ?? ["?"]).isEmpty else {
                throw BackupError("\(directory) exists and is not an empty folder: stop the endpoint and move it aside first")
            }
        }
        try BackupCommand.makeFolder(directory)
        // The manifest first: a restore cut short leaves a folder that a start checks against it
        // and refuses, never one that starts as an ordinary node without an id floor.
        do {
            try LogBackup.copyFile(backup + "/" + BackupManifest.fileName, directory + "/" + BackupManifest.fileName)
        } catch {
            throw BackupError("cannot copy the manifest: \(error)")
        }
        for file in manifest.files {
            let from = backup + "/" + file.path, to = directory + "/" + file.path
            if let slash = file.path.lastIndex(of: "/") { try BackupCommand.makeFolder(directory + "/" + file.path[..<slash]) }
            // Sealed segments and what was derived from them are never written again: linked.
            let immutable = (file.path.hasPrefix("log/") && (file.path.hasSuffix(".log") || file.path.hasSuffix(".index")))
                || file.path.hasPrefix("digests/") || file.path.hasPrefix("postback-keys/")
            do {
                if immutable { try LogBackup.linkOrCopy(from, to) } else { try LogBackup.copyFile(from, to) }
            } catch {
                throw BackupError("cannot copy \(file.path) from the backup: \(error)")
            }
        }
        return try RestoredData.take(directory, at: now, checked: true)
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attribution-endpoint restore: \(message)\n".utf8))
        return 1
    }
}
