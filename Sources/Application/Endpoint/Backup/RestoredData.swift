import DurableFiles
import Foundation
import Primitives
import RecordLog

/// A data directory that holds a backup's manifest is a backup being restored: checked, then
/// made the node's. Done by `attribution-endpoint restore` once it has copied the backup, and by
/// a start on a backup's folder itself.
///
/// 1. Every file is checked against the manifest; one that differs stops it, naming the file.
/// 2. The log is marked restored: from then on its ids start above anything the lost log can
///    have given (`LogRestore`), so that ClickHouse and relays, which may hold records the backup
///    does not, never see an id twice for two records.
/// 3. The manifest becomes `restored-from.json` (with when, and the id floor), so that this is
///    done once: the folder is now the node's and changes.
enum RestoredData {
    /// Whether `directory` holds a backup still to be restored.
    static func isPending(_ directory: String) -> Bool {
        FileManager.default.fileExists(atPath: directory + "/" + BackupManifest.fileName)
    }

    /// Checks and takes the backup in `directory`; returns its manifest as kept. `checked`: its
    /// files were checked already, where they were copied from.
    @discardableResult
    static func take(_ directory: String, at now: Timestamp, checked: Bool = false) throws(BackupError) -> BackupManifest {
        var manifest = try BackupManifest.load(from: directory)
        if !checked { try check(manifest, in: directory) }
        let restore: LogRestore
        do {
            restore = try RecordLog.markRestored(directory: directory, at: now)
        } catch {
            throw BackupError("the log in \(directory) cannot be marked restored: \(error)")
        }
        manifest.restoredAt = now
        manifest.idFloor = restore.floor
        do {
            try DurableFile.replace(path: directory + "/" + BackupManifest.restoredName, with: Array(try encoded(manifest)))
        } catch {
            throw BackupError("cannot write \(directory)/\(BackupManifest.restoredName): \(error)")
        }
        guard unlink(directory + "/" + BackupManifest.fileName) == 0 else {
            throw BackupError("cannot remove \(directory)/\(BackupManifest.fileName): errno \(errno)")
        }
        EventLog.write("restored", ["data": .string(directory), "backup_created_at": .string(manifest.createdAt.rfc3339),
                                    "log_end": .number(String(manifest.log.end)), "files": .number(String(manifest.files.count)),
                                    "id_floor": .number(String(restore.floor))])
        return manifest
    }

    /// Refuses a backup whose files are not those of its manifest, naming them.
    static func check(_ manifest: BackupManifest, in directory: String) throws(BackupError) {
        let problems = manifest.problems(in: directory)
        guard problems.isEmpty else {
            throw BackupError("the backup in \(directory) does not match its manifest, so it is not taken: " + problems.prefix(10).joined(separator: "; ")
                              + (problems.count > 10 ? "; and \(problems.count - 10) more" : ""))
        }
    }

    private static func encoded(_ manifest: BackupManifest) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(manifest)
    }
}
