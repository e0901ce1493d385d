import Foundation

/// The data directory and the secrets beside it are the operator's alone, whatever the umask: the
/// directory and every folder in it 0700, every file 0600, and a secret read from a file that
/// others could read is refused, as ssh refuses such a key.
public enum PrivateFiles {
    /// Creates `path` (and its parents) as 0700 if missing, then takes group's and others' bits off
    /// it and off everything below it (a data directory made before, or by a looser umask).
    /// Returns how many files and folders it changed.
    @discardableResult
    public static func restrictTree(_ path: String) throws -> Int {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The folder itself may be a link the operator made (to another disk): followed, once.
        let root = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var changed = restrict(root, following: true) ? 1 : 0
        guard let walk = FileManager.default.enumerator(atPath: root) else { return changed }
        while let name = walk.nextObject() as? String {
            if restrict(root + "/" + name, following: false) { changed += 1 }
        }
        return changed
    }

    /// Takes group's and others' bits off one file or folder, through a descriptor, so that a
    /// link put in its place meanwhile is not followed (`O_NOFOLLOW`: a link itself is left).
    private static func restrict(_ path: String, following: Bool) -> Bool {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (following ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & 0o077 != 0 else { return false }
        return fchmod(fd, info.st_mode & 0o700) == 0
    }

    /// The first line of a file holding a secret; refused when the file can be read by its group
    /// or others, or is not a regular file.
    public static func readSecret(_ path: String, what: String) throws(PrivateFileError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw PrivateFileError("cannot read \(what) \(path): errno \(errno)") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw PrivateFileError("\(what) \(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw PrivateFileError("\(what) \(path) can be read by others (mode \(String(info.st_mode & 0o777, radix: 8))): "
                                   + "chmod 600 it, as ssh asks of a private key")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PrivateFileError("cannot read \(what) \(path) as UTF-8 text")
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
    }
}

public struct PrivateFileError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
