import Foundation

/// A small JSON file that is replaced whole: a registry (`registry.json` for site owners,
/// `apps.json` for app developers), the token keys, the export's cursor. Replaced atomically (write a temporary file, flush it, rename it over
/// the old one, flush the directory) so that a crash leaves either the old registry or the new
/// one, never half of each. `token-keys.json` holds private keys, so it is written with mode
/// 0600.
public struct DurableJSONFile<Contents: Codable & Sendable>: Sendable {
    public let path: String
    public let empty: Contents
    public let mode: mode_t

    public init(path: String, empty: Contents, mode: mode_t = 0o600) {
        self.path = path
        self.empty = empty
        self.mode = mode
    }

    public func load() throws -> Contents {
        guard let data = FileManager.default.contents(atPath: path) else { return empty }
        do {
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw DurableFileError(description: "\(path) cannot be read: \(error)")
        }
    }

    public func save(_ registry: Contents) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(registry)
        try DurableFile.replace(path: path, with: [UInt8](data), mode: mode)
    }
}

/// Replacing a file whole so that a crash leaves the old one or the new, never half of each:
/// written to a temporary file, flushed, renamed over the old one, the directory flushed.
public enum DurableFile {
    public static func replace(path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw DurableFileError(description: "cannot write \(temporary): errno \(errno)") }
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
        let flushed = fsync(fd) == 0
        close(fd)
        guard written && flushed else {
            unlink(temporary)
            throw DurableFileError(description: "cannot write \(temporary): errno \(errno)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw DurableFileError(description: "cannot replace \(path): errno \(errno)")
        }
        syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Makes the names in `path` durable: a rename or an unlink in it survives a power cut.
    public static func syncDirectory(_ path: String) {
        let directory = open(path, O_RDONLY)
        if directory >= 0 {
            _ = fsync(directory)
            _ = close(directory)
        }
    }
}

public struct DurableFileError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
