import Crypto
import Foundation

/// SHA-256 of a file, read a megabyte at a time: what a backup's manifest holds for each file,
/// and what a restore checks it against.
public enum FileChecksum {
    /// The lowercase hex SHA-256 of the file at `path`, and its size; nil when it cannot be read.
    public static func sha256(path: String) -> (hex: String, bytes: Int)? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var hash = SHA256()
        var bytes = 0
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch { return nil }
            // nil or empty: the end (Foundation says either, by platform).
            guard let chunk, !chunk.isEmpty else { break }
            hash.update(data: chunk)
            bytes += chunk.count
        }
        return (hash.finalize().map { String(format: "%02x", $0) }.joined(), bytes)
    }
}
