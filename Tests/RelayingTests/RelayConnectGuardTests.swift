import Foundation
import HTTPServer
import Locking
import Primitives
import Relays
import Testing
@testable import Relaying
#if canImport(Glibc)
import Glibc
#endif

/// The connect guard: the proxy every HTTPS relay goes through, which checks the address it
/// connects to, not only the name. Talked to here as libcurl talks to it, over a socket; what it
/// decides is checked for each kind of address, and against a name that changes between the
/// delivery's check and the connection (DNS rebinding).
@Suite struct RelayConnectGuardTests {
    static let outside = IPAddress("93.184.215.14")!

    /// A guard serving `host:port` (internal if `allowInternal`), names resolved by `resolve`.
    static func makeGuard(host: String = "partner.example", port: Int, allowInternal: Bool,
                          resolve: @escaping @Sendable (String) -> [IPAddress]?) throws -> RelayConnectGuard {
        try RelayConnectGuard(policy: { h, p in h == host && p == port ? allowInternal : nil }, resolve: resolve, connectTimeout: 2,
                              announce: { _, _ in })
    }

    /// A destination on loopback that keeps every body it is sent (`Keep`), and its port.
    static func keeper() throws -> (HTTPServer, Int, Locked<[[UInt8]]>) {
        let received = Locked<[[UInt8]]>([])
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.accessLog = nil
        let server = HTTPServer(configuration: configuration, handler: Keep(received: received))
        return (server, Int(try server.start()), received)
    }

    /// A connection to the guard: what it writes and reads, as bytes.
    final class Client {
        let fd: Int32
        init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw CocoaError(.fileReadUnknown) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd) }

        func send(_ text: String) { _ = RelayConnectGuard.writeAll(fd, Array(text.utf8)) }

        /// What arrives until `marker` has, or the connection ends.
        func read(until marker: String) -> String {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !String(decoding: bytes, as: UTF8.self).contains(marker) {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                bytes.append(contentsOf: buffer[0..<n])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test func whatItDecidesForEachKindOfAddress() throws {
        typealias Case = (addresses: [IPAddress]?, allowInternal: Bool, connects: [IPAddress]?)
        let loopback = IPAddress("127.0.0.1")!, privateNet = IPAddress("10.0.0.8")!, metadata = IPAddress("169.254.169.254")!
        let cases: [Case] = [
            ([Self.outside], false, [Self.outside]),
            ([loopback], false, nil),
            ([loopback], true, [loopback]),
            ([privateNet], false, nil),
            ([metadata], true, nil),
            ([privateNet, Self.outside], false, [Self.outside]),
            ([metadata, loopback], true, [loopback]),
            (nil, true, nil),
        ]
        for (addresses, allowInternal, connects) in cases {
            let guarded = try Self.makeGuard(port: 443, allowInternal: allowInternal, resolve: { _ in addresses })
            defer { guarded.stop() }
            let decision = guarded.decide(host: "partner.example", port: 443)
            if let connects {
                #expect(decision == .connect(connects), "\(String(describing: addresses)) internal \(allowInternal)")
            } else if case .refused = decision {
            } else {
                Issue.record("\(String(describing: addresses)) internal \(allowInternal): \(decision)")
            }
        }
        // Another port of the same host, or another host, is no destination's.
        let guarded = try Self.makeGuard(port: 443, allowInternal: true, resolve: { _ in [Self.outside] })
        defer { guarded.stop() }
        #expect(guarded.decide(host: "partner.example", port: 22) == .refused("partner.example:22 is no relay destination's"))
        #expect(guarded.decide(host: "other.example", port: 443) == .refused("other.example:443 is no relay destination's"))
    }

    @Test func aNameThatChangesBetweenTheDeliverysCheckAndTheConnectionIsRefusedAtTheConnection() throws {
        // The first lookup (the delivery's, before its turn) says outside; the next (the guard's,
        // at the connection) says loopback: DNS rebinding with a zero TTL.
        let lookups = Locked(0)
        let resolve: @Sendable (String) -> [IPAddress]? = { _ in
            lookups.withLock { $0 += 1; return $0 } == 1 ? [Self.outside] : [IPAddress("127.0.0.1")!]
        }
        #expect(HostResolver.refusal(of: "partner.example", allowInternal: false, resolve: resolve) == nil)
        let guarded = try Self.makeGuard(port: 443, allowInternal: false, resolve: resolve)
        defer { guarded.stop() }
        let client = try Client(port: guarded.port)
        client.send("CONNECT partner.example:443 HTTP/1.1\r\nHost: partner.example:443\r\n\r\n")
        let answer = client.read(until: "\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 403"), "\(answer)")
        #expect(guarded.counts.refused == 1 && guarded.counts.tunnels == 0)
    }

    /// A guard stopped before its accept loop has begun leaves nothing that serves another
    /// guard's connections: the stopped guard's descriptor, closed under a loop not yet in
    /// `accept`, was given to the next guard's listener, and the old loop answered there by the
    /// old guard's rules (a 200 where the new guard refuses).
    @Test func aStoppedGuardNeverAnswersForTheNextOne() throws {
        for round in 0..<40 {
            let stopped = try Self.makeGuard(port: 443, allowInternal: true, resolve: { _ in nil })
            stopped.stop()
            let guarded = try RelayConnectGuard(policy: { _, _ in nil }, resolve: { _ in nil }, connectTimeout: 2, announce: { _, _ in })
            defer { guarded.stop() }
            let client = try Client(port: guarded.port)
            client.send("CONNECT partner.example:443 HTTP/1.1\r\nHost: partner.example:443\r\n\r\n")
            let answer = client.read(until: "no relay destination's")
            #expect(answer.hasSuffix("partner.example:443 is no relay destination's"), "round \(round): \(answer)")
            #expect(stopped.counts.refused == 0, "round \(round)")
        }
    }

    @Test func anAllowedConnectionCarriesTheBytesBothWays() throws {
        let (server, port, received) = try Self.keeper()
        defer { server.shutdown(); server.waitUntilStopped() }
        let guarded = try Self.makeGuard(host: "localhost", port: port, allowInternal: true, resolve: HostResolver.addresses(of:))
        defer { guarded.stop() }
        let client = try Client(port: guarded.port)
        client.send("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n") == "HTTP/1.1 200 Connection established\r\nX-Attribution-Relay-Tunnel: open\r\n\r\n")
        for n in 0..<3 {
            client.send("POST /copies HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\ncopy\(n)")
            #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 204"))
        }
        #expect(received.withLock { $0 } == (0..<3).map { Array("copy\($0)".utf8) }, "one tunnel, kept alive")
        #expect(guarded.counts.tunnels == 1)
    }

    @Test func behindAnOperatorsProxyTheTunnelGoesThroughIt() throws {
        let (server, port, received) = try Self.keeper()
        defer { server.shutdown(); server.waitUntilStopped() }
        // The operator's proxy, played by another guard; it asks for credentials it is given.
        let operators = try Self.makeGuard(host: "localhost", port: port, allowInternal: true, resolve: HostResolver.addresses(of:))
        defer { operators.stop() }
        let upstream = try #require(RelayConnectGuard.Upstream(url: "http://relay:s%40cret@127.0.0.1:\(operators.port)"))
        #expect(upstream.authorization == "Basic " + Data("relay:s@cret".utf8).base64EncodedString())
        let guarded = try RelayConnectGuard(policy: { h, p in h == "localhost" && p == port ? true : nil }, connectTimeout: 2,
                                            upstream: upstream, announce: { _, _ in })
        defer { guarded.stop() }
        let client = try Client(port: guarded.port)
        client.send("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        client.send("POST /copies HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\r\ncopy")
        #expect(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 204"))
        #expect(received.withLock { $0 } == [Array("copy".utf8)])
        #expect(operators.counts.tunnels == 1 && guarded.counts.tunnels == 1)
        // A proxy URL that does not read is none.
        #expect(RelayConnectGuard.Upstream(url: "socks5://127.0.0.1:1080") == nil)
        #expect(RelayConnectGuard.Upstream(url: "proxy.internal:3128")?.port == 3128)
    }

    struct Keep: HTTPHandler {
        let received: Locked<[[UInt8]]>
        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            received.withLock { $0.append(request.body) }
            responder.respond(HTTPResponse(status: 204))
        }
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\nHost: partner.example\r\n\r\n",
        "CONNECT partner.example:0 HTTP/1.1\r\n\r\n",
        "CONNECT partner.example:99999 HTTP/1.1\r\n\r\n",
        "CONNECT partner.example HTTP/1.1\r\n\r\n",
        "CONNECT :443 HTTP/1.1\r\n\r\n",
        "CONNECT user@partner.example:443 HTTP/1.1\r\n\r\n",
        "CONNECT partner.example:443\r\n\r\n",
        "CONNECT partner.example:443 HTTP/1.1\r\nX: " + String(repeating: "a", count: 10_000) + "\r\n\r\n",
        "\u{0}\u{1}\u{2}\r\n\r\n",
    ])
    func aRequestThatIsNotAConnectIsRefused(request: String) throws {
        let guarded = try Self.makeGuard(port: 443, allowInternal: false, resolve: { _ in [Self.outside] })
        defer { guarded.stop() }
        let client = try Client(port: guarded.port)
        client.send(request)
        let answer = client.read(until: "\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(40))")
        #expect(guarded.counts.tunnels == 0)
    }

    @Test func connectionsBeyondTheBoundAreAnswered503() throws {
        let guarded = try Self.makeGuard(port: 443, allowInternal: false, resolve: { _ in [Self.outside] })
        defer { guarded.stop() }
        // Connections that say nothing hold their threads (for up to ten seconds each).
        var idle: [Client] = []
        for _ in 0..<RelayConnectGuard.maxTunnels { idle.append(try Client(port: guarded.port)) }
        let deadline = Date().addingTimeInterval(10)
        var answer = ""
        // Until the guard has taken all of them in, one more may still be admitted.
        while Date() < deadline, !answer.hasPrefix("HTTP/1.1 503") {
            let extra = try Client(port: guarded.port)
            extra.send("CONNECT partner.example:443 HTTP/1.1\r\n\r\n")
            answer = extra.read(until: "\r\n\r\n")
        }
        #expect(answer.hasPrefix("HTTP/1.1 503"))
        #expect(guarded.counts.open <= RelayConnectGuard.maxTunnels)
        idle.removeAll()
    }

    /// Through the process's guard, as the relays go: a refusal of the guard's, or a tunnel that
    /// opens and then carries no answer, is never taken for the destination's answer (Foundation
    /// hands the guard's answers to the delegate as if they were the destination's).
    @Test func noAnswerOfTheGuardsIsTakenForTheDestinations() throws {
        guard case .guarded = RelayEgress.install(bypassing: [], announce: { _, _ in }) else {
            Issue.record("the process's guard is not installed")
            return
        }
        // A listener that closes each connection at once: the tunnel opens, TLS never does.
        let closing = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(closing, $0, length) } }
        listen(closing, 8)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(closing, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let closer = Thread {
            while true {
                let connection = accept(closing, nil, nil)
                guard connection >= 0 else {
                    // Closed here, after its last `accept`: the descriptor is no other socket's yet.
                    close(closing)
                    return
                }
                close(connection)
            }
        }
        closer.start()
        defer { shutdown(closing, Int32(SHUT_RDWR)) }
        let key = RelayEgress.register { host, p in host == "localhost" && p == port ? true : nil }
        defer { RelayEgress.unregister(key) }
        let transport = URLSessionRelayTransport(timeout: 5, connections: 1)
        defer { transport.invalidate() }
        let request = { (url: String) in RelayRequest(url: url, headers: [("Content-Type", "application/json")], body: Array("{}".utf8)) }
        // Refused: no destination is there.
        let refused = transport.post(request("https://nobody.invalid:8443/copies"))
        guard case .failed(let why) = refused else { Issue.record("taken as an answer: \(refused)"); return }
        #expect(why.contains("connect check refused"), "\(why)")
        // Let through, then nothing: a failure, not the tunnel's 200.
        let opened = transport.post(request("https://localhost:\(port)/copies"))
        guard case .failed = opened else { Issue.record("taken as an answer: \(opened)"); return }
    }
}
