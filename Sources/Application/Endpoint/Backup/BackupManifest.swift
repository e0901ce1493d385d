import DurableFiles
import Foundation
import Primitives
import Signatures

/// What a backup holds (`backup-manifest.json` at its top): every file, with its size and
/// SHA-256, and where its log begins and ends. A restore, or a start on the copy itself, checks
/// every file against it before anything is taken from it.
struct BackupManifest: Codable, Sendable, Equatable {
    static let fileName = "backup-manifest.json"
    /// The manifest of the backup a data directory was restored from, kept once the restore is
    /// done (with when, and the id floor): the folder is then the node's, and changes.
    static let restoredName = "restored-from.json"

    struct File: Codable, Sendable, Equatable {
        var path: String
        var bytes: Int
        var sha256: String
    }

    struct LogRange: Codable, Sendable, Equatable {
        /// Log offsets: where the copied log begins, and the cut (just after its last record).
        var start: Int
        var end: Int
    }

    var format = 1
    var createdAt: Timestamp
    /// The data directory it was taken from.
    var source: String
    /// The node name its export and relay cursors were written under (nil without them): the
    /// restored node must run under it, or they refuse to go on.
    var node: String?
    var log: LogRange
    var files: [File]
    var restoredAt: Timestamp?
    var idFloor: UInt64?

    enum CodingKeys: String, CodingKey {
        case format, createdAt = "created_at", source, node, log, files, restoredAt = "restored_at", idFloor = "id_floor"
    }

    /// The manifest of `paths` (relative to `directory`), reading each for its checksum.
    static func make(directory: String, paths: [String], source: String, node: String?, log: LogRange, at now: Timestamp) throws(BackupError) -> BackupManifest {
        var files: [File] = []
        for path in paths.sorted() {
            guard let (hex, bytes) = FileChecksum.sha256(path: directory + "/" + path) else {
                throw BackupError("cannot read \(directory)/\(path) for its checksum")
            }
            files.append(File(path: path, bytes: bytes, sha256: hex))
        }
        return BackupManifest(createdAt: now, source: source, node: node, log: log, files: files)
    }

    static func load(from directory: String) throws(BackupError) -> BackupManifest {
        let path = directory + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else { throw BackupError("\(path) is missing: this is not a backup") }
        do {
            let manifest = try JSONDecoder().decode(BackupManifest.self, from: data)
            guard manifest.format == 1 else { throw BackupError("\(path) is of format \(manifest.format), which this version does not read") }
            return manifest
        } catch let error as BackupError {
            throw error
        } catch {
            throw BackupError("\(path) cannot be read: \(error)")
        }
    }

    func save(in directory: String) throws(BackupError) {
        do {
            try DurableJSONFile<BackupManifest?>(path: directory + "/" + Self.fileName, empty: nil).save(self)
        } catch {
            throw BackupError("cannot write \(directory)/\(Self.fileName): \(error)")
        }
    }

    /// Every file of the manifest in `directory`, as it was when the backup was taken: the
    /// problems, one per file (missing, another size, another checksum), none when it holds.
    func problems(in directory: String) -> [String] {
        files.compactMap { file in
            let path = directory + "/" + file.path
            guard FileManager.default.fileExists(atPath: path) else { return "\(file.path): missing" }
            guard ((try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType) == .typeRegular else {
                return "\(file.path): not a regular file"
            }
            guard let (hex, bytes) = FileChecksum.sha256(path: path) else { return "\(file.path): unreadable" }
            if bytes != file.bytes { return "\(file.path): \(bytes) bytes, the manifest says \(file.bytes)" }
            if hex != file.sha256 { return "\(file.path): its SHA-256 is not the manifest's" }
            return nil
        }
    }

    /// A path from the manifest that stays inside the folder it is read from.
    static func isSafe(_ path: String) -> Bool {
        !path.isEmpty && !path.hasPrefix("/") && !path.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == ".." || $0 == "." || $0.isEmpty }
    }
}

/// A backup or restore that cannot be done, and why.
struct BackupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
