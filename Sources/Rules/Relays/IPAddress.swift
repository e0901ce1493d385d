#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address, and what kind of network it belongs to: a relay may send copies
/// only to the public internet, unless its destination is allowed to be internal (a data team's
/// own collector). A name that resolves, or an address that is connected to, inside any other
/// range is refused: otherwise anyone who can register a destination could make the endpoint
/// reach its own loopback services, the private network behind it, or a cloud's metadata
/// service and its credentials.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 16 bytes; an IPv4 address in its IPv4-mapped IPv6 form (`::ffff:a.b.c.d`).
    public let bytes: [UInt8]

    /// The kinds of network an address can be in, as IANA's special-purpose registries name them.
    public enum Kind: String, Sendable, Equatable {
        case `public`
        case loopback
        /// RFC 1918, shared address space (RFC 6598, carrier-grade NAT) and unique local IPv6.
        case `private`
        case linkLocal = "link_local"
        /// The instance metadata services of the large clouds (AWS, GCP, Azure, Alibaba, Oracle):
        /// link-local or private already, named apart because they hand out credentials.
        case cloudMetadata = "cloud_metadata"
        case unspecified
        case multicast
        /// Documentation, benchmarking, reserved and deprecated ranges: nothing to send to.
        case reserved
    }

    /// `a.b.c.d`, or any IPv6 text form (`::1`, `fe80::1`, `::ffff:10.0.0.1`), without brackets.
    public init?(_ text: String) {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        var v4 = in_addr()
        // inet_pton takes only the dotted quad (no octal, no shortened forms such as `127.1`).
        guard inet_pton(AF_INET, text, &v4) == 1 else { return nil }
        bytes = Self.mapped(withUnsafeBytes(of: &v4) { Array($0) })
    }

    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self.bytes = Self.mapped(bytes)
        case 16: self.bytes = bytes
        default: return nil
        }
    }

    /// Whether the C library reads `text` as an IPv4 address in one of its older forms
    /// (`127.1`, `0x7f.0.0.1`, `017700000001`): a resolver turns such a "name" into that address.
    public static func isLegacyIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_aton(text, &address) != 0
    }

    private static func mapped(_ v4: [UInt8]) -> [UInt8] { [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + v4 }

    /// The IPv4 address, when this is one (IPv4-mapped).
    public var v4: [UInt8]? {
        bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF ? Array(bytes[12..<16]) : nil
    }

    public var description: String {
        if let v4 { return v4.map(String.init).joined(separator: ".") }
        var raw = bytes
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Anything but the public internet.
    public var isInternal: Bool { kind != .public }

    public var kind: Kind {
        if let v4 { return Self.kind(v4: v4) }
        let b = bytes
        if b.allSatisfy({ $0 == 0 }) { return .unspecified }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopback }
        // Forms that carry an IPv4 address a gateway would reach: judged by that address.
        // NAT64 (64:ff9b::/96, RFC 6052), and 6to4 (2002::/16, RFC 3056).
        if b[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return Self.kind(v4: Array(b[12..<16])) }
        if b[0] == 0x20 && b[1] == 0x02 { return Self.kind(v4: Array(b[2..<6])) }
        // IPv4-compatible (::/96, deprecated), discard-only (100::/64), documentation (2001:db8::/32).
        if b[0..<12].allSatisfy({ $0 == 0 }) { return .reserved }
        if b[0] == 0x01 && b[1..<8].allSatisfy({ $0 == 0 }) { return .reserved }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return .reserved }
        // AWS's IPv6 instance metadata service and EKS Pod Identity, inside the unique local range.
        if b[0..<14] == [0xFD, 0, 0x0E, 0xC2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], b[14] == 0 && b[15] == 0x23 || b[14] == 0x02 && b[15] == 0x54 {
            return .cloudMetadata
        }
        // GCP's IPv6 metadata server, also inside the unique local range.
        if b[0..<4] == [0xFD, 0x20, 0, 0xCE], b[4..<14].allSatisfy({ $0 == 0 }), b[14] == 0x02, b[15] == 0x54 { return .cloudMetadata }
        // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): a translator on the operator's own network.
        if b[0..<6] == [0, 0x64, 0xFF, 0x9B, 0, 0x01] { return .private }
        if b[0] & 0xFE == 0xFC { return .private }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocal }
        // Site-local (fec0::/10), deprecated by RFC 3879: private in practice.
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return .private }
        if b[0] == 0xFF { return .multicast }
        return .public
    }

    private static func kind(v4 a: [UInt8]) -> Kind {
        switch (a[0], a[1], a[2], a[3]) {
        // Instance metadata (AWS, GCP, Azure, Oracle), Alibaba's, ECS task credentials, EKS Pod
        // Identity, Azure's WireServer (a public address every Azure VM reaches its host by).
        case (169, 254, 169, 254), (100, 100, 100, 200), (192, 0, 0, 192), (169, 254, 170, 2), (169, 254, 170, 23), (168, 63, 129, 16):
            return .cloudMetadata
        case (0, _, _, _): return .unspecified
        case (127, _, _, _): return .loopback
        case (10, _, _, _), (172, 16...31, _, _), (192, 168, _, _), (100, 64...127, _, _): return .private
        case (169, 254, _, _): return .linkLocal
        case (192, 0, 0, _), (192, 0, 2, _), (198, 51, 100, _), (203, 0, 113, _), (198, 18...19, _, _): return .reserved
        case (224...239, _, _, _): return .multicast
        case (240...255, _, _, _): return .reserved
        default: return .public
        }
    }
}
