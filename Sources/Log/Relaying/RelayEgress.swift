#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Locking
import Primitives

/// The process's one `RelayConnectGuard`, and the `https_proxy` that sends libcurl (under
/// URLSession) through it. The environment is the process's, so there is one guard per process,
/// installed once, before the first relay connects, whatever the number of endpoints in it (the
/// tests run several); each endpoint's relays say which hosts are theirs (`register`).
///
/// An operator's own egress proxy (`https_proxy`, `HTTPS_PROXY`, `all_proxy` or `ALL_PROXY` set
/// when the endpoint starts) is kept behind the guard: the guard checks the name and then opens
/// its tunnels through that proxy, whose part it is to check the address it connects to. Only
/// Apple's and ClickHouse's hosts bypass the guard (`no_proxy`).
public enum RelayEgress {
    public enum Installation: Sendable, Equatable {
        /// Relays connect through the guard on this port (and, if named, through the operator's
        /// proxy behind it, from that variable).
        case guarded(port: UInt16, behind: String?)
        /// The operator's proxy, named by this variable, does not read as `http://host:port`: the
        /// guard connects directly.
        case unreadableProxy(variable: String)
        case failed(String)
    }

    private struct State: Sendable {
        var installation: Installation?
        var guardian: RelayConnectGuard?
        var policies: [Int: RelayConnectGuard.Policy] = [:]
        var next = 0
    }

    private static let state = Locked(State())

    /// Installs the guard once (later calls return what the first did). `bypassing`: hosts that
    /// do not go through it (Apple's, ClickHouse's), added to `no_proxy`.
    public static func install(bypassing hosts: [String], announce: @escaping @Sendable (String, [(String, JSONValue)]) -> Void) -> Installation {
        state.withLock { s -> Installation in
            if let done = s.installation { return done }
            let installation: Installation
            let proxies: [String] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
            let named = proxies.lazy.compactMap { variable in getenv(variable).map { (variable, String(cString: $0)) } }.first { !$0.1.isEmpty }
            let upstream = named.flatMap { RelayConnectGuard.Upstream(url: $0.1) }
            do {
                let guardian = try RelayConnectGuard(policy: { host, port in decide(host: host, port: port) }, upstream: upstream,
                                                     announce: announce)
                s.guardian = guardian
                // Only these bypass the guard: an operator's own no_proxy would let a relay past it.
                let bypass = hosts.filter { !$0.isEmpty }.joined(separator: ",")
                setenv("no_proxy", bypass, 1)
                setenv("NO_PROXY", bypass, 1)
                setenv("https_proxy", guardian.url, 1)
                unsetenv("HTTPS_PROXY")
                unsetenv("all_proxy")
                unsetenv("ALL_PROXY")
                if let named, upstream == nil {
                    installation = .unreadableProxy(variable: named.0)
                } else {
                    installation = .guarded(port: guardian.port, behind: named?.0)
                }
            } catch {
                installation = .failed("\(error)")
            }
            s.installation = installation
            return installation
        }
    }

    /// The guard's counts, once installed.
    public static var counts: RelayConnectGuard.Counts? { state.withLock { $0.guardian?.counts } }

    /// Adds an endpoint's relay destinations to what the guard serves; returns the key to remove them with.
    public static func register(_ policy: @escaping RelayConnectGuard.Policy) -> Int {
        state.withLock { s in
            s.next += 1
            s.policies[s.next] = policy
            return s.next
        }
    }

    public static func unregister(_ key: Int) {
        state.withLock { s in s.policies[key] = nil }
    }

    /// A destination of any endpoint in the process; internal if any that is there may be.
    static func decide(host: String, port: Int) -> Bool? {
        let policies = state.withLock { Array($0.policies.values) }
        var found: Bool?
        for policy in policies {
            guard let allowInternal = policy(host, port) else { continue }
            found = (found ?? false) || allowInternal
        }
        return found
    }
}
