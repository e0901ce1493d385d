/// What a `Host` (or `X-Forwarded-Host`) value may be: a DNS name or an IP literal, with an
/// optional numeric port (RFC 9110 §7.2, RFC 3986 §3.2.2). Anything else is refused before it
/// reaches a rule, a log or a `Location`: `shop.example:@evil.example` is not a host, and
/// neither is `news.example:abc`.
public enum HostSyntax {
    /// The longest name DNS carries (RFC 1035), without a trailing dot.
    static let maxNameBytes = 253

    /// The host's name, lowercased, without its port and trailing dot, and without the brackets
    /// of an IPv6 literal; nil when `value` is not `name[:port]`, `IPv4[:port]` or
    /// `[IPv6][:port]` with a port 1–65535.
    public static func name(of value: String) -> String? {
        authority(of: value)?.name
    }

    /// The host's name (as `name(of:)` gives it) and its port, if one was given.
    public static func authority(of value: String) -> (name: String, port: Int?)? {
        var value = value
        let whole = value.utf8.count
        let found = value.withUTF8 { bytes -> (name: Range<Int>, port: Int, lowercase: Bool)? in
            parse(bytes).map { ($0.name, $0.port, !bytes[$0.name].contains { $0 >= 65 && $0 <= 90 }) }
        }
        guard let found else { return nil }
        // Nearly every Host is already a bare lowercase name: then it is its own name, with no copy.
        if found.name == 0..<whole && found.lowercase { return (value, nil) }
        return value.withUTF8 { authority(of: $0) }
    }

    /// Whether `bytes` are a host, without building its name: the check every request gets.
    public static func isHost(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        parse(bytes) != nil
    }

    static func authority(of bytes: UnsafeBufferPointer<UInt8>) -> (name: String, port: Int?)? {
        guard let (name, port) = parse(bytes) else { return nil }
        return (lowercased(UnsafeBufferPointer(rebasing: bytes[name])), port == 0 ? nil : port)
    }

    /// Where the name is in `bytes` (without brackets or trailing dot), and the port (0: none).
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> (name: Range<Int>, port: Int)? {
        guard let first = bytes.first else { return nil }
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
                  isIPv6(UnsafeBufferPointer(rebasing: bytes[1..<close])),
                  let port = port(UnsafeBufferPointer(rebasing: bytes[(close + 1)...])) else { return nil }
            return (1..<close, port)
        }
        let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
        guard let port = port(UnsafeBufferPointer(rebasing: bytes[colon...])) else { return nil }
        let end = colon > 0 && bytes[colon - 1] == UInt8(ascii: ".") ? colon - 1 : colon
        guard isDNSName(UnsafeBufferPointer(rebasing: bytes[..<end])) else { return nil }
        return (0..<end, port)
    }

    /// Labels of 1–63 letters, digits and hyphens, no hyphen at either end, 253 bytes at most.
    /// An IPv4 address is such a name too; whether a name is a registrable site is the site
    /// rules' business, not this.
    static func isDNSName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !name.isEmpty, name.count <= maxNameBytes else { return false }
        // Every request's Host goes through here: a table lookup per byte, not a chain of ranges.
        var labelStart = 0
        var i = 0
        while i < name.count {
            let c = name[i]
            switch byteClass[Int(c)] {
            case 1:
                break
            case 2:
                guard i > labelStart else { return false }  // a hyphen cannot begin a label
            case 3:
                guard i > labelStart, name[i - 1] != UInt8(ascii: "-"), i - labelStart <= 63 else { return false }
                labelStart = i + 1
            default:
                return false
            }
            i += 1
        }
        return name.count > labelStart && name[name.count - 1] != UInt8(ascii: "-") && name.count - labelStart <= 63
    }

    /// 1: a letter or digit, 2: `-`, 3: `.`, 0: anything else.
    private static let byteClass: [UInt8] = (0..<256).map { b -> UInt8 in
        switch UInt8(b) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): 1
        case UInt8(ascii: "-"): 2
        case UInt8(ascii: "."): 3
        default: 0
        }
    }

    /// Hex digits, colons and the dots of an embedded IPv4 tail; at least two colons. (Zone ids
    /// never travel in a Host header.)
    static func isIPv6(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard (2...45).contains(text.count) else { return false }
        var colons = 0
        for c in text {
            switch c {
            case UInt8(ascii: ":"): colons += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
                 UInt8(ascii: "."): break
            default: return false
            }
        }
        return (2...7).contains(colons)
    }

    /// Nothing (0), or `:` and a port 1–65535 in at most five digits; nil for anything else.
    static func port(_ suffix: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = suffix.first else { return 0 }
        guard first == UInt8(ascii: ":"), (2...6).contains(suffix.count) else { return nil }
        var port = 0
        for c in suffix.dropFirst() {
            guard c >= 48 && c <= 57 else { return nil }
            port = port * 10 + Int(c - 48)
        }
        return (1...65535).contains(port) ? port : nil
    }

    private static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        // Nearly every Host is already lowercase: then the bytes are the string as they are.
        if !bytes.contains(where: { $0 >= 65 && $0 <= 90 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
