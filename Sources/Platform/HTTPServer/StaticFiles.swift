import Foundation

/// Serves the files of one directory, read-only: a known content type per extension, `ETag` and
/// `Cache-Control: no-cache` (the browser revalidates and gets 304 while a file is unchanged),
/// and no way out of the directory.
public struct StaticFiles: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = (directory as NSString).standardizingPath
    }

    static let types: [String: String] = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json",
        "txt": "text/plain; charset=utf-8", "webmanifest": "application/manifest+json",
    ]

    /// The answer for `path` (the request path, still percent-encoded), or nil when no file
    /// matches. Anything that could name a file outside the directory is nil too.
    public func response(path: Substring, ifNoneMatch: String?) -> HTTPResponse? {
        guard let relative = Self.safeRelativePath(path) else { return nil }
        let name = relative.isEmpty ? "index.html" : relative
        let ext = (name as NSString).pathExtension.lowercased()
        guard let type = Self.types[ext] else { return nil }
        let full = directory + "/" + name
        // Symbolic links could point anywhere: serve only regular files under the directory.
        let resolved = (full as NSString).resolvingSymlinksInPath
        guard resolved.hasPrefix((directory as NSString).resolvingSymlinksInPath + "/"),
              let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
              attributes[.type] as? FileAttributeType == .typeRegular,
              let data = FileManager.default.contents(atPath: resolved) else { return nil }
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let etag = "\"\(data.count)-\(Int64(modified * 1000))\""
        var headers: HTTPHeaders = ["Content-Type": type, "Cache-Control": "no-cache", "ETag": etag,
                                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"]
        if ext == "html" {
            headers.add(name: "Content-Security-Policy",
                        value: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
        }
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { $0.trimmingSpaces == etag }) {
            return HTTPResponse(status: 304, headers: headers, body: [])
        }
        // For HEAD the server sends the head only, with this body's length.
        return HTTPResponse(status: 200, headers: headers, body: [UInt8](data))
    }

    /// Decodes and checks `path`: only `[A-Za-z0-9._-]` segments, none starting with a dot, no
    /// empty segments, after percent-decoding once. So `/../`, `%2e%2e`, `%2f`, backslashes,
    /// NUL and hidden files all fail.
    static func safeRelativePath(_ path: Substring) -> String? {
        guard path.hasPrefix("/") else { return nil }
        var decoded: [UInt8] = []
        var bytes = path.utf8.dropFirst().makeIterator()
        while let c = bytes.next() {
            if c == UInt8(ascii: "%") {
                guard let h = bytes.next(), let l = bytes.next(), let hv = PercentDecoding.hex(h), let lv = PercentDecoding.hex(l) else { return nil }
                decoded.append(hv << 4 | lv)
            } else {
                decoded.append(c)
            }
        }
        if decoded.isEmpty { return "" }
        let text = String(decoding: decoded, as: UTF8.self)
        for segment in text.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty, !segment.hasPrefix("."),
                  segment.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 46 || $0 == 95 }) else {
                return nil
            }
        }
        return text
    }
}
