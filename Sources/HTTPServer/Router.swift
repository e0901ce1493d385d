import Locking
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A route: a path (exact, or every path under a prefix), the methods it takes, and its handler.
public struct Route: Sendable {
    public enum Path: Sendable, Hashable {
        case exact(String)
        /// Every path that starts with this.
        case prefix(String)
    }

    public var path: Path
    public var methods: [String]
    public var handler: @Sendable (HTTPRequest, HTTPResponder) -> Void

    public init(_ path: Path, methods: [String], handler: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) {
        self.path = path
        self.methods = methods
        self.handler = handler
    }

    /// A route whose answer is ready at once.
    public init(_ path: Path, methods: [String], answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.init(path, methods: methods) { request, responder in responder.respond(answer(request)) }
    }
}

/// Routes that share a gate: a check every request to them passes first (the bearer token, say),
/// answering in its place when it fails.
public struct RouteGroup: Sendable {
    public var name: String
    public var gate: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    public var routes: [Route]

    public init(_ name: String, gate: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil, routes: [Route]) {
        self.name = name
        self.gate = gate
        self.routes = routes
    }
}

/// Maps a request to its route: the table, not a switch. A path no route has is the fallback's;
/// a path whose routes do not take the method is answered 405 with `Allow` built from the table.
/// The gate of the path's group runs before the method check, so a caller without the token
/// learns nothing about the path.
public struct Router: Sendable {
    /// Exact paths as bytes, searched in order: with a dozen paths of different lengths, comparing
    /// lengths then bytes costs less than hashing the path for a dictionary.
    private let exact: [(path: [UInt8], entry: Entry)]
    private let prefixes: [(prefix: String, entry: Entry)]
    private let fallback: @Sendable (HTTPRequest, HTTPResponder) -> Void
    private let methodNotAllowed: @Sendable (HTTPRequest, _ allow: String) -> HTTPResponse

    private struct Entry: Sendable {
        var gate: (@Sendable (HTTPRequest) -> HTTPResponse?)?
        var routes: [Route]
        var allow: String
    }

    /// `fallback` answers paths no route has (static files, then 404); `methodNotAllowed` builds
    /// the 405, whose `Allow` header the router adds.
    public init(_ groups: [RouteGroup], methodNotAllowed: @escaping @Sendable (HTTPRequest, _ allow: String) -> HTTPResponse,
                fallback: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) {
        var exact: [(path: [UInt8], entry: Entry)] = []
        var prefixes: [(String, Entry)] = []
        var owner: [Route.Path: String] = [:]
        for group in groups {
            for route in group.routes {
                // A path belongs to one group, so that one gate decides who may reach it.
                precondition(owner[route.path, default: group.name] == group.name, "\(route.path) is in two route groups")
                owner[route.path] = group.name
                switch route.path {
                case .exact(let path):
                    if let i = exact.firstIndex(where: { $0.path == Array(path.utf8) }) {
                        exact[i].entry.routes.append(route)
                    } else {
                        exact.append((Array(path.utf8), Entry(gate: group.gate, routes: [route], allow: "")))
                    }
                case .prefix(let prefix):
                    if let i = prefixes.firstIndex(where: { $0.0 == prefix }) {
                        prefixes[i].1.routes.append(route)
                    } else {
                        prefixes.append((prefix, Entry(gate: group.gate, routes: [route], allow: "")))
                    }
                }
            }
        }
        func allow(_ entry: inout Entry) { entry.allow = entry.routes.flatMap(\.methods).joined(separator: ", ") }
        for i in exact.indices { allow(&exact[i].entry) }
        for i in prefixes.indices { allow(&prefixes[i].1) }
        self.exact = exact
        self.prefixes = prefixes
        self.fallback = fallback
        self.methodNotAllowed = methodNotAllowed
    }

    public func route(_ request: HTTPRequest, responder: HTTPResponder) {
        let path = request.path
        guard let entry = exactEntry(path) ?? prefixes.first(where: { path.hasPrefix($0.prefix) })?.entry else {
            return fallback(request, responder)
        }
        if let gate = entry.gate, let refusal = gate(request) { return responder.respond(refusal) }
        guard let route = entry.routes.first(where: { $0.methods.contains(request.method) }) else {
            // `Allow` is the table's, whatever the answer's builder put there.
            var response = methodNotAllowed(request, entry.allow)
            response.headers.remove(name: "Allow")
            response.headers.add(name: "Allow", value: entry.allow)
            return responder.respond(response)
        }
        route.handler(request, responder)
    }

    private func exactEntry(_ path: Substring) -> Entry? {
        var path = path
        return path.withUTF8 { bytes in
            for candidate in exact where candidate.path.count == bytes.count {
                if candidate.path.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
                    return candidate.entry
                }
            }
            return nil
        }
    }

    /// Routes `request` without a socket and returns the answer, if it was given before this
    /// returns: for tests of every route whose answer does not wait for a commit.
    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        let answer = Locked<HTTPResponse?>(nil)
        route(request, responder: HTTPResponder { response in answer.withLock { $0 = response } })
        return answer.withLock { $0 }
    }
}
