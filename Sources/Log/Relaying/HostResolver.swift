#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Relays

/// What a destination's name resolves to, checked before each turn's first attempt: a name that
/// resolves inside the endpoint's own networks is refused unless the destination may be
/// internal, and a cloud metadata address always, so that a partner's DNS cannot point the relay
/// at the endpoint's neighbours after it was registered.
///
/// The check is of the name, just before URLSession resolves it again itself: a name that changes
/// between the two lookups (DNS rebinding, with a zero TTL) is caught at the connection, by the
/// connect guard (`RelayConnectGuard`), which checks the address it connects to.
public enum HostResolver {
    /// Every address `host` resolves to; nil when it resolves to none.
    public static func addresses(of host: String) -> [IPAddress]? {
        if let literal = IPAddress(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let sockaddr = info.pointee.ai_addr {
                switch Int32(info.pointee.ai_family) {
                case AF_INET:
                    sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var a = v4.pointee.sin_addr
                        if let address = IPAddress(bytes: withUnsafeBytes(of: &a) { Array($0) }) { addresses.append(address) }
                    }
                case AF_INET6:
                    sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var a = v6.pointee.sin6_addr
                        if let address = IPAddress(bytes: withUnsafeBytes(of: &a) { Array($0) }) { addresses.append(address) }
                    }
                default: break
                }
            }
            next = info.pointee.ai_next
        }
        return addresses.isEmpty ? nil : addresses
    }

    /// Why `host` may not be sent to now, or nil.
    public static func refusal(of host: String, allowInternal: Bool,
                               resolve: (String) -> [IPAddress]? = addresses(of:)) -> String? {
        guard let addresses = resolve(host) else { return "\(host) resolves to no address" }
        if let metadata = addresses.first(where: { $0.kind == .cloudMetadata }) {
            return "\(host) resolves to \(metadata), a cloud metadata service"
        }
        if !allowInternal, let inside = addresses.first(where: \.isInternal) {
            return "\(host) resolves to \(inside) (\(inside.kind.rawValue)): the destination is not allowed to be internal"
        }
        return nil
    }
}
