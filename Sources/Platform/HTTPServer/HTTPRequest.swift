#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum HTTPVersion: Sendable, Equatable {
    case http1_0
    case http1_1
}

/// One complete request: head and decoded body.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request-target as received, e.g. `/api/reports?since=2026-11-20T00:00:00Z`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The body with any chunked framing removed.
    public var body: [UInt8]
    /// The peer's address, for trusted-proxy decisions. Handlers must not store it with user data.
    public var remoteAddress: String

    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders(),
                body: [UInt8] = [], remoteAddress: String = "") {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The target's path, without the query.
    public var path: Substring {
        // Scanning contiguous bytes first: String.UTF8View's generic search costs far more.
        let offset = target.utf8.withContiguousStorageIfAvailable { $0.firstIndex(of: UInt8(ascii: "?")) }
        let q: String.Index? = switch offset {
        case .some(.some(let i)): target.utf8.index(target.utf8.startIndex, offsetBy: i)
        case .some(.none): nil
        case .none: target.utf8.firstIndex(of: UInt8(ascii: "?"))
        }
        if let q { return target[..<q] }
        return target[...]
    }

    /// The target's query string, without the `?`.
    public var query: Substring? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Percent-decoded query parameters, in order; `+` stands for a space.
    public var queryItems: [(name: String, value: String)] {
        guard let query else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentDecoding.decode(parts[0])
            let value = parts.count > 1 ? PercentDecoding.decode(parts[1]) : ""
            return (name, value)
        }
    }

    /// The first query parameter named twice (after percent-decoding), if any: `a=1&a=2` has no
    /// one meaning, and a server that picks one silently picks differently on each path.
    public var repeatedQueryParameter: String? {
        // Nearly every request has no query: found out on the contiguous bytes, as `path` does.
        let hasQuery = target.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.baseAddress.map { memchr($0, Int32(UInt8(ascii: "?")), bytes.count) != nil } ?? false
        } ?? (query != nil)
        guard hasQuery else { return nil }
        var seen: Set<String> = []
        return queryItems.first { !seen.insert($0.name).inserted }?.name
    }

    /// Whether the connection stays open after this request, by RFC 9112 §9.3.
    public var keepAlive: Bool {
        if headers.listContains("Connection", token: "close") { return false }
        return version == .http1_1 || headers.listContains("Connection", token: "keep-alive")
    }
}

enum PercentDecoding {
    static func decode(_ s: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            if c == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if c == UInt8(ascii: "%"), let h = it.next(), let l = it.next(), let hv = hex(h), let lv = hex(l) {
                bytes.append(hv << 4 | lv)
            } else {
                bytes.append(c)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
