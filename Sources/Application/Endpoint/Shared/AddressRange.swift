#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP address or CIDR block (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`), for deciding
/// which peers are trusted proxies.
struct AddressRange: Sendable, Equatable {
    /// 16 bytes; IPv4 is kept in its IPv4-mapped IPv6 form so both families compare alike.
    let bytes: [UInt8]
    let prefixLength: Int

    init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else { return nil }
        let isV4 = !parts[0].contains(":")
        var prefix = 128
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 0, n <= (isV4 ? 32 : 128) else { return nil }
            prefix = isV4 ? 96 + n : n
        }
        bytes = address
        prefixLength = prefix
    }

    func contains(_ addressText: String) -> Bool {
        guard let address = Self.parse(addressText) else { return false }
        var remaining = prefixLength
        for i in 0..<16 where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address[i] & mask != bytes[i] & mask { return false }
            remaining -= bits
        }
        return true
    }

    static func parse(_ text: String) -> [UInt8]? {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) }
        }
        return nil
    }
}
