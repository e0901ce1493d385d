import DurableFiles
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Marketers
import Primitives
import Signatures

/// The viewer tokens, in `DATA/viewer-tokens.json` (mode 0600), as SHA-256 hashes. The
/// `viewer-token` command writes the file while the endpoint runs; the endpoint sees a change at
/// the next request that presents a viewer token (a `stat` of the file), so a revoked token stops
/// working at once, without a restart.
final class ViewerTokenStore: Sendable {
    static let fileName = "viewer-tokens.json"

    let path: String
    private let file: DurableJSONFile<ViewerTokenList>
    /// The list as last read, and the file's identity then (inode, size, change time).
    private let cache = Locked<(list: ViewerTokenList, stamp: [Int64]?)>((ViewerTokenList(), nil))

    convenience init(dataDirectory: String) {
        self.init(path: dataDirectory + "/" + Self.fileName)
    }

    /// `--viewer-tokens FILE`: a cluster's one file, given to every node.
    init(path: String) {
        self.path = path
        file = DurableJSONFile(path: path, empty: ViewerTokenList(), mode: 0o600)
    }

    /// The list as the file holds it now. A file that cannot be read keeps no token working.
    var list: ViewerTokenList {
        let stamp = Self.stamp(path)
        return cache.withLock { cached in
            if cached.stamp == stamp, stamp != nil { return cached.list }
            let list = (try? file.load()) ?? ViewerTokenList()
            cached = (list, stamp)
            return list
        }
    }

    /// The viewer token that `token` is, or nil.
    func lookup(_ token: String) -> ViewerToken? {
        guard let id = ViewerToken.id(inToken: token), let kept = list.token(id: id) else { return nil }
        let hash = Hex.text(Fingerprint.sha256(Array(token.utf8)))
        // Both are 64 hex digits: compared in time independent of where they differ.
        var difference: UInt8 = hash.utf8.count == kept.sha256.utf8.count ? 0 : 1
        for (a, b) in zip(hash.utf8, kept.sha256.utf8) { difference |= a ^ b }
        return difference == 0 ? kept : nil
    }

    /// Makes a token: the record kept, and the token itself, shown once and never again.
    func create(label: String, advertiser: String?, now: Timestamp) throws -> (record: ViewerToken, token: String) {
        var generator = SystemRandomNumberGenerator()
        let id = Hex.text((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let secret = Hex.text((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let token = ViewerToken.prefix + id + "_" + secret
        let record = ViewerToken(id: id, label: label, advertiser: advertiser, createdAt: now.rfc3339,
                                 sha256: Hex.text(Fingerprint.sha256(Array(token.utf8))))
        try update { (list) throws(RequestProblem) in try list.add(record) }
        return (record, token)
    }

    @discardableResult
    func revoke(id: String) throws -> Bool {
        var found = false
        try update { list in found = list.revoke(id: id) }
        return found
    }

    /// Read, changed and saved under an exclusive `flock` of `viewer-tokens.json.lock`: two
    /// commands at once (an add and a revoke) must not save over each other, or a revoked token
    /// would come back.
    private func update(_ change: (inout ViewerTokenList) throws(RequestProblem) -> Void) throws {
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw DurableFileError(description: "cannot open \(path).lock: errno \(errno)") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw DurableFileError(description: "cannot lock \(path).lock: errno \(errno)") }
        }
        defer { flock(lock, LOCK_UN) }
        var list = try file.load()
        try change(&list)
        try file.save(list)
        // A file put there by hand may be 0644: it holds no token, but keep it the endpoint's alone.
        chmod(path, 0o600)
    }

    private static func stamp(_ path: String) -> [Int64]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Glibc)
        let changed = info.st_ctim
        #else
        let changed = info.st_ctimespec
        #endif
        // Truncating: an inode number may use all 64 bits (overlayfs, some network file systems).
        return [Int64(truncatingIfNeeded: info.st_ino), Int64(truncatingIfNeeded: info.st_size),
                Int64(truncatingIfNeeded: changed.tv_sec), Int64(truncatingIfNeeded: changed.tv_nsec)]
    }
}
