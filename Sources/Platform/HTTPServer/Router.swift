#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A route: a path (exact, or every path under a prefix), the methods it takes, and its handler.
///
/// A handler answers through the responder, or throws: the router gives what it threw to its
/// `refused` closure, whose answer goes in its place. So a handler reads top to bottom, and no
/// refusal is turned into an answer by hand.
public struct Route: Sendable {
    public enum Path: Sendable, Hashable {
        case exact(String)
        /// Every path that starts with this.
        case prefix(String)
    }

    public var path: Path
    public var methods: [String]
    public var handler: @Sendable (HTTPRequest, HTTPResponder) throws -> Void
    /// Where the handler runs once the gate has let the request through: nil, on the event loop
    /// (work of microseconds); a pool, on its threads (a read that computes its answer, so that
    /// no report waits behind it). A pool whose queue is full answers `WorkersBusy`.
    public var workers: WorkerPool?

    public init(_ path: Path, methods: [String], workers: WorkerPool? = nil,
                handler: @escaping @Sendable (HTTPRequest, HTTPResponder) throws -> Void) {
        self.path = path
        self.methods = methods
        self.workers = workers
        self.handler = handler
    }

    /// A route whose answer is ready at once (on the loop), or made on `workers`.
    public init(_ path: Path, methods: [String], workers: WorkerPool? = nil, answer: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        self.init(path, methods: methods, workers: workers) { request, responder in responder.respond(try answer(request)) }
    }

    /// What a route's `workers` answer when every thread is busy and their queue is full: the
    /// router hands it to `refused` (a 503).
    public struct WorkersBusy: Error, Sendable {
        public let path: String
    }
}

/// Routes that share a gate: a check every request to them passes first (the bearer token, say),
/// throwing the refusal that is answered in their place.
public struct RouteGroup: Sendable {
    public typealias Gate = @Sendable (HTTPRequest) throws -> Void
    public var name: String
    public var gate: Gate?
    public var routes: [Route]

    public init(_ name: String, gate: Gate? = nil, routes: [Route]) {
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
    private let fallback: @Sendable (HTTPRequest, HTTPResponder) throws -> Void
    private let methodNotAllowed: @Sendable (HTTPRequest, _ allow: String) -> HTTPResponse
    private let refused: @Sendable (HTTPRequest, any Error) -> HTTPResponse

    private struct Entry: Sendable {
        var gate: RouteGroup.Gate?
        var routes: [Route]
        var allow: String
    }

    /// `fallback` answers paths no route has (static files, then 404); `methodNotAllowed` builds
    /// the 405, whose `Allow` header the router adds; `refused` answers what a gate, a handler or
    /// the fallback threw.
    public init(_ groups: [RouteGroup], methodNotAllowed: @escaping @Sendable (HTTPRequest, _ allow: String) -> HTTPResponse,
                refused: @escaping @Sendable (HTTPRequest, any Error) -> HTTPResponse,
                fallback: @escaping @Sendable (HTTPRequest, HTTPResponder) throws -> Void) {
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
        self.refused = refused
    }

    /// Every path in the table, with the methods it takes and whether a gate guards it: what a
    /// test of the whole table walks, so that a new route cannot go untested.
    public var table: [(path: Route.Path, methods: [String], gated: Bool)] {
        exact.map { (.exact(String(decoding: $0.path, as: UTF8.self)), $0.entry.routes.flatMap(\.methods), $0.entry.gate != nil) }
            + prefixes.map { (.prefix($0.prefix), $0.entry.routes.flatMap(\.methods), $0.entry.gate != nil) }
    }

    public func route(_ request: HTTPRequest, responder: HTTPResponder) {
        do {
            let path = request.path
            guard let entry = exactEntry(path) ?? prefixes.first(where: { path.hasPrefix($0.prefix) })?.entry else {
                return try fallback(request, responder)
            }
            try entry.gate?(request)
            guard let route = entry.routes.first(where: { $0.methods.contains(request.method) }) else {
                // `Allow` is the table's, whatever the answer's builder put there.
                var response = methodNotAllowed(request, entry.allow)
                response.headers.remove(name: "Allow")
                response.headers.add(name: "Allow", value: entry.allow)
                return responder.respond(response)
            }
            guard let workers = route.workers else { return try route.handler(request, responder) }
            let refused = self.refused
            let taken = workers.submit {
                do {
                    try route.handler(request, responder)
                } catch {
                    responder.respond(refused(request, error))
                }
            }
            if !taken { throw Route.WorkersBusy(path: String(path)) }
        } catch {
            responder.respond(refused(request, error))
        }
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
}
