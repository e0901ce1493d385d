import DurableFiles
import Foundation
import Primitives
import RecordLog

/// A data directory that holds a backup's manifest is a backup being restored: checked, then
/// made the node's. Done by `attribution-endpoint restore` once it has copied the backup, and by
/// a start on a backup's folder itself.
///
/// 1. Every file is checked against the manifest; one that differs stops it, naming the file.
/// 2. The manifest becomes `restored-from.json`, without an id floor yet: the folder is the
///    node's from here on, and changes (the next step seals its active segment).
/// 3. The log is marked restored: from then on its ids start above anything the lost log can
///    have given (`LogRestore`), so that ClickHouse and relays, which may hold records the backup
///    does not, never see an id twice for two records. Then the floor is written into
///    `restored-from.json`. A restore cut short after step 2 is finished by the next start.
///
/// A folder that holds `backup-incomplete` without a manifest is a backup that did not finish: it
/// is refused, since its log may lack what its cursors say was sent.
enum RestoredData {
    /// Whether `directory` holds a backup still to be restored, or a restore to be finished.
    static func isPending(_ directory: String) -> Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: directory + "/" + BackupManifest.fileName) || fm.fileExists(atPath: directory + "/" + BackupCommand.incompleteName) {
            return true
        }
        // Only a restore cut short: a kept manifest that cannot be read is not one (it is replaced
        // whole, so it is never half written) and must not stop a node that has run for a year.
        guard let kept = try? kept(in: directory) else { return false }
        return kept.idFloor == nil
    }

    /// Checks and takes the backup in `directory`, or finishes its restore; returns its manifest
    /// as kept. `checked`: its files were checked already, where they were copied from.
    @discardableResult
    static func take(_ directory: String, at now: Timestamp, checked: Bool = false) throws(BackupError) -> BackupManifest {
        let fm = FileManager.default
        let manifestPath = directory + "/" + BackupManifest.fileName, keptPath = directory + "/" + BackupManifest.restoredName
        var manifest: BackupManifest
        if fm.fileExists(atPath: manifestPath) {
            manifest = try BackupManifest.load(from: directory)
            if !checked { try check(manifest, in: directory) }
            try checkClock(now, against: manifest)
            // One rename, so that exactly one of the two is there whatever stops this: the manifest
            // (checked again) or the kept one without a floor (finished by the next start).
            guard rename(manifestPath, keptPath) == 0 else { throw BackupError("cannot rename \(manifestPath): errno \(errno)") }
            DurableFile.syncDirectory(directory)
            _ = unlink(directory + "/" + BackupCommand.incompleteName)
            manifest.restoredAt = now
            try save(manifest, at: keptPath)
        } else if fm.fileExists(atPath: directory + "/" + BackupCommand.incompleteName) {
            throw BackupError("\(directory) is a backup that did not finish (\(BackupCommand.incompleteName) is there and \(BackupManifest.fileName) is not): take another, or restore an earlier one")
        } else {
            manifest = try kept(in: directory)
        }
        let restore: LogRestore
        do {
            restore = try RecordLog.markRestored(directory: directory, at: now)
        } catch {
            throw BackupError("the log in \(directory) cannot be marked restored: \(error)")
        }
        manifest.idFloor = restore.floor
        try save(manifest, at: keptPath)
        EventLog.write("restored", ["data": .string(directory), "backup_created_at": .string(manifest.createdAt.rfc3339),
                                    "node": manifest.node.map { .string($0) } ?? .null, "log_end": .number(String(manifest.log.end)),
                                    "files": .number(String(manifest.files.count)), "id_floor": .number(String(restore.floor))])
        return manifest
    }

    /// Ids must rise above what the lost node gave, and the floor comes from the clock: a clock
    /// behind the backup's own time would give a floor below them.
    static func checkClock(_ now: Timestamp, against manifest: BackupManifest) throws(BackupError) {
        guard now.millisecondsSinceEpoch >= manifest.createdAt.millisecondsSinceEpoch else {
            throw BackupError("this machine's clock (\(now.rfc3339)) is behind the time the backup was taken (\(manifest.createdAt.rfc3339)): set the clock (NTP) before restoring")
        }
    }

    /// Refuses a backup whose files are not those of its manifest, naming them.
    static func check(_ manifest: BackupManifest, in directory: String) throws(BackupError) {
        for file in manifest.files where !BackupManifest.isSafe(file.path) {
            throw BackupError("the manifest names \"\(file.path)\", a path outside the backup")
        }
        let problems = manifest.problems(in: directory)
        guard problems.isEmpty else {
            throw BackupError("the backup in \(directory) does not match its manifest, so it is not taken (a restore cut short: move the folder aside and restore again): "
                              + problems.prefix(10).joined(separator: "; ") + (problems.count > 10 ? "; and \(problems.count - 10) more" : ""))
        }
    }

    private static func kept(in directory: String) throws(BackupError) -> BackupManifest {
        let path = directory + "/" + BackupManifest.restoredName
        do {
            return try JSONDecoder().decode(BackupManifest.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw BackupError("\(path) cannot be read: \(error)")
        }
    }

    private static func save(_ manifest: BackupManifest, at path: String) throws(BackupError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try DurableFile.replace(path: path, with: Array(try encoder.encode(manifest)))
        } catch {
            throw BackupError("cannot write \(path): \(error)")
        }
    }
}
