#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Locking
import Primitives
import Relays

/// The check of the address a relay actually connects to. Foundation on Linux neither takes a
/// resolved address nor a proxy per session, but its libcurl takes the process's `https_proxy`:
/// this is that proxy, on 127.0.0.1, and every HTTPS relay goes through it. For each `CONNECT`
/// it resolves the name once, refuses an address the destination may not reach (a cloud
/// metadata service always; loopback, private, link-local and reserved ones unless the
/// destination may be internal), connects to the address it checked, and then only moves bytes:
/// TLS stays between the relay and the destination, certificates checked as before. A name that
/// resolves to a public address when the turn begins and to an inside one when the connection is
/// made (DNS rebinding) is refused here.
///
/// It serves relay destinations alone (`policy` says which host and port are one, and whether
/// it may be internal); anything else asked of it is refused, so that another program on the
/// machine cannot use it to reach anything. Apple's and ClickHouse's hosts are left out of it
/// (`no_proxy`). At most `maxTunnels` connections at once, each on a thread of its own.
public final class RelayConnectGuard: Sendable {
    /// For a host and port: nil when no relay destination is there; else whether it may be internal.
    public typealias Policy = @Sendable (_ host: String, _ port: Int) -> Bool?

    public static let maxTunnels = 256
    /// What each of the guard's answers to a `CONNECT` carries (`open`, or `refused`): Foundation
    /// on Linux hands the tunnel's answer to the delegate as if it were the destination's (libcurl
    /// passes its headers on), and the transport must know it, to wait for the real one past a 200
    /// and never to take a refusal of the guard's for the destination's.
    public static let tunnelHeader = "X-Attribution-Relay-Tunnel"
    static let established = "HTTP/1.1 200 Connection established\r\n\(tunnelHeader): open\r\n\r\n"
    /// Bytes of a `CONNECT` request, headers included.
    static let maxRequest = 8192

    public let port: UInt16
    private let listener: Int32
    private let policy: Policy
    private let resolve: @Sendable (String) -> [IPAddress]?
    private let connectTimeout: Double
    /// An operator's own egress proxy, which the tunnels then go through (`host`, `port`, and
    /// the `Proxy-Authorization` its URL's user and password make).
    private let upstream: Upstream?

    public struct Upstream: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var authorization: String?

        /// From a proxy URL such as `http://user:pw@proxy.internal:3128`; nil if it does not read.
        public init?(url text: String) {
            let withScheme = text.contains("://") ? text : "http://" + text
            guard let url = URL(string: withScheme), let host = url.host, !host.isEmpty, url.scheme == "http" else { return nil }
            self.host = host
            port = url.port ?? 80
            if let user = url.user {
                let name: String = user.removingPercentEncoding ?? user
                let password: String = url.password?.removingPercentEncoding ?? ""
                let credentials = Data((name + ":" + password).utf8)
                authorization = "Basic " + credentials.base64EncodedString()
            }
        }
    }
    private let announce: @Sendable (String, [(String, JSONValue)]) -> Void
    private let state = Locked(Counts())
    private let threads = DispatchGroup()

    public struct Counts: Sendable, Equatable {
        public var open = 0
        public var tunnels = 0
        public var refused = 0
        var stopped = false
    }

    public init(policy: @escaping Policy, resolve: @escaping @Sendable (String) -> [IPAddress]? = HostResolver.addresses(of:),
                connectTimeout: Double = 10, upstream: Upstream? = nil,
                announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void) throws {
        self.policy = policy
        self.upstream = upstream
        self.resolve = resolve
        self.connectTimeout = connectTimeout
        self.announce = announce
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw GuardError("socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw GuardError("bind/listen on 127.0.0.1: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        threads.startThread(named: "relay-connect") { [self] in acceptLoop() }
    }

    /// The proxy's URL, as `https_proxy` names it.
    public var url: String { "http://127.0.0.1:\(port)" }

    public var counts: Counts { state.withLock { $0 } }

    /// Takes no more connections; those open end as their peers close them.
    ///
    /// The listener is shut down here (which ends the waiting `accept`) and closed by the accept
    /// loop as it leaves: closed here, its descriptor could be given to another socket before the
    /// loop's next `accept`, which would then serve that socket's connections by this guard's rules.
    public func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    public struct GuardError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if state.withLock({ $0.stopped }) {
                    close(listener)
                    return
                }
                // Out of descriptors, for a moment: the next accept may work.
                usleep(10_000)
                continue
            }
            let admitted = state.withLock { s -> Bool in
                guard s.open < Self.maxTunnels else { return false }
                s.open += 1
                return true
            }
            guard admitted else {
                Self.answer(client, status: "503 Service Unavailable", reason: "too many relay connections at once")
                close(client)
                continue
            }
            threads.startThread(named: "relay-tunnel", stackSize: 256 * 1024) { [self] in
                serve(client)
                close(client)
                state.withLock { $0.open -= 1 }
            }
        }
    }

    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let target = Self.readConnect(client) else {
            Self.answer(client, status: "400 Bad Request", reason: "only CONNECT host:port is served here")
            return
        }
        switch decide(host: target.host, port: target.port) {
        case .refused(let reason):
            state.withLock { $0.refused += 1 }
            announce("relay_connect_refused", [("host", .string(String(target.host.prefix(255)))), ("port", .number(String(target.port))),
                                               ("reason", .string(reason))])
            Self.answer(client, status: "403 Forbidden", reason: reason)
        case .connect(let addresses):
            let connected: Int32?
            if let proxy = self.upstream {
                // The name was checked here; the address the operator's proxy connects to is its own to check.
                connected = viaUpstream(proxy, host: target.host, port: target.port)
            } else {
                connected = connectFirst(addresses, port: target.port)
            }
            guard let upstream = connected else {
                Self.answer(client, status: "502 Bad Gateway", reason: "no address of \(target.host) answered")
                return
            }
            defer { close(upstream) }
            state.withLock { $0.tunnels += 1 }
            guard Self.writeAll(client, Array(Self.established.utf8)) else { return }
            Self.pump(client, upstream)
        }
    }

    enum Decision: Equatable {
        case connect([IPAddress])
        case refused(String)
    }

    /// What to do with `CONNECT host:port`: the addresses to try, each checked, or why not.
    func decide(host: String, port: Int) -> Decision {
        guard let allowInternal = policy(host, port) else {
            return .refused("\(host):\(port) is no relay destination's")
        }
        guard let addresses = resolve(host), !addresses.isEmpty else { return .refused("\(host) resolves to no address") }
        let allowed = addresses.filter { $0.kind != .cloudMetadata && (allowInternal || !$0.isInternal) }
        guard !allowed.isEmpty else {
            let first = addresses[0]
            return .refused("\(host) resolves to \(first) (\(first.kind.rawValue)), which the destination may not reach")
        }
        return .connect(allowed)
    }

    /// `CONNECT host:port HTTP/1.1` and its headers, up to the blank line; nil for anything else.
    static func readConnect(_ fd: Int32) -> (host: String, port: Int)? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        // Ten seconds for the whole request, not for each piece: a byte every nine seconds does
        // not hold a tunnel's thread.
        let deadline = DispatchTime.now() + 10
        while bytes.count < maxRequest, DispatchTime.now() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, maxRequest - bytes.count), 0) }
            guard n > 0 else { return nil }
            bytes.append(contentsOf: buffer[0..<n])
            // Nothing but the request comes before the answer: the client waits for the 200.
            if bytes.count >= 4, bytes.suffix(4).elementsEqual([13, 10, 13, 10]) { break }
        }
        guard bytes.count >= 4, bytes.suffix(4).elementsEqual([13, 10, 13, 10]),
              let line = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n").first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT", parts[2].hasPrefix("HTTP/1.") else { return nil }
        return parseAuthority(String(parts[1]))
    }

    /// `host:port` or `[v6]:port`.
    static func parseAuthority(_ authority: String) -> (host: String, port: Int)? {
        guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        var host = String(authority[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.utf8.count <= 253, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else { return nil }
        return (host.lowercased(), port)
    }

    /// A tunnel to `host:port` through the operator's proxy: its own `CONNECT`, answered 2xx.
    private func viaUpstream(_ proxy: Upstream, host: String, port: Int) -> Int32? {
        guard let addresses = resolve(proxy.host), let fd = connectFirst(addresses, port: proxy.port) else { return nil }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization = proxy.authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        request += "\r\n"
        var timeout = timeval(tv_sec: Int(connectTimeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard Self.writeAll(fd, Array(request.utf8)), let status = Self.readStatus(fd), (200...299).contains(status) else {
            close(fd)
            return nil
        }
        return fd
    }

    /// The status of an answer, read to its blank line and no further.
    static func readStatus(_ fd: Int32) -> Int? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < maxRequest {
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            bytes.append(byte)
            if bytes.count >= 4, bytes.suffix(4).elementsEqual([13, 10, 13, 10]) { break }
        }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: " ", maxSplits: 2)
        return line.count >= 2 && line[0].hasPrefix("HTTP/") ? Int(line[1]) : nil
    }

    private func connectFirst(_ addresses: [IPAddress], port: Int) -> Int32? {
        for address in addresses {
            if let fd = Self.connect(to: address, port: port, timeout: connectTimeout) { return fd }
        }
        return nil
    }

    /// A connection to exactly `address`, within `timeout` seconds.
    static func connect(to address: IPAddress, port: Int, timeout: Double) -> Int32? {
        // An IPv4 address (kept as ::ffff:a.b.c.d) is dialled over IPv4: a host without IPv6, or
        // with bindv6only, takes no mapped address.
        let v4 = address.v4
        let v6 = v4 == nil
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var result: Int32
        if v6 {
            var a = sockaddr_in6()
            a.sin6_family = sa_family_t(AF_INET6)
            a.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &a.sin6_addr) { $0.copyBytes(from: address.bytes) }
            result = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &a.sin_addr) { $0.copyBytes(from: v4 ?? []) }
            result = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        if result != 0 && errno != EINPROGRESS {
            close(fd)
            return nil
        }
        if result != 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&poller, 1, Int32(timeout * 1000)) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
                close(fd)
                return nil
            }
        }
        _ = fcntl(fd, F_SETFL, flags)
        return fd
    }

    /// Moves bytes both ways until either side closes, or nothing moves for five minutes (a
    /// kept-alive connection the relay no longer uses).
    static func pump(_ a: Int32, _ b: Int32) {
        var zero = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &zero, socklen_t(MemoryLayout<timeval>.size))
        // Each piece goes on at once: Nagle's wait for an ACK, against the peer's delayed ACK,
        // would hold every small TLS record for tens of milliseconds.
        // A peer that stops reading (a zero window) would hold a write, and the thread, for ever.
        var one: Int32 = 1
        var sendLimit = timeval(tv_sec: 60, tv_usec: 0)
        for fd in [a, b] {
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendLimit, socklen_t(MemoryLayout<timeval>.size))
        }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 2, 300_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return }
            for i in 0..<2 where fds[i].revents != 0 {
                let (from, to) = i == 0 ? (a, b) : (b, a)
                let n = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, $0.count, 0) }
                guard n > 0, writeAll(to, buffer[0..<n]) else {
                    shutdown(to, Int32(SHUT_WR))
                    return
                }
            }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let array = Array(bytes)
        var sent = 0
        while sent < array.count {
            let n = array.withUnsafeBytes { send(fd, $0.baseAddress! + sent, array.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    static func answer(_ fd: Int32, status: String, reason: String) {
        let body = Array(reason.utf8.prefix(512))
        _ = writeAll(fd, Array("HTTP/1.1 \(status)\r\n\(tunnelHeader): refused\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body)
    }
}
