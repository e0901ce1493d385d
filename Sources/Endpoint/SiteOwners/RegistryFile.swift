import PCM
import Primitives
import SiteOwners
import Foundation

/// A registry's home on disk (`registry.json` for site owners, `apps.json` for app developers,
/// in the data directory), replaced atomically (write a temporary file, flush it, rename it over
/// the old one, flush the directory) so that a crash leaves either the old registry or the new
/// one, never half of each.
struct RegistryFile<Contents: Codable & Sendable>: Sendable {
    let path: String
    let empty: Contents

    init(path: String, empty: Contents) {
        self.path = path
        self.empty = empty
    }

    func load() throws -> Contents {
        guard let data = FileManager.default.contents(atPath: path) else { return empty }
        do {
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw RegistryFileError(description: "\(path) cannot be read: \(error)")
        }
    }

    func save(_ registry: Contents) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(registry)
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw RegistryFileError(description: "cannot write \(temporary)")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else {
            throw RegistryFileError(description: "cannot replace \(path): errno \(errno)")
        }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY)
        if directory >= 0 {
            _ = fsync(directory)
            _ = close(directory)
        }
    }
}

struct RegistryFileError: Error, CustomStringConvertible {
    var description: String
}
