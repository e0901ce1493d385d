/// base64url (RFC 4648 §5) as PCM's token fields use it: URL-safe alphabet, no padding.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let chunk = UInt32(bytes[i]) << 16 | (n > 1 ? UInt32(bytes[i + 1]) << 8 : 0) | (n > 2 ? UInt32(bytes[i + 2]) : 0)
            for k in 0...n { out.append(alphabet[Int(chunk >> (18 - 6 * UInt32(k)) & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func isValidUnpadded(_ text: String) -> Bool {
        let bytes = text.utf8
        // A single leftover character cannot encode a byte.
        guard !bytes.isEmpty, bytes.count % 4 != 1 else { return false }
        return bytes.allSatisfy { c in
            (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
    }
}

/// Base64 decoding (RFC 4648), both alphabets: SKAdNetwork's signatures are standard base64 with
/// padding, a JWS's segments base64url without.
public enum Base64 {
    /// The bytes, or nil for text that is not base64 of the given alphabet. Padding is optional
    /// but must be right when present; whitespace is not allowed.
    public static func decode(_ text: String, urlSafe: Bool) -> [UInt8]? {
        var bytes = Array(text.utf8)
        var padding = 0
        while bytes.last == UInt8(ascii: "=") && padding < 2 {
            bytes.removeLast()
            padding += 1
        }
        if padding > 0 && (bytes.count + padding) % 4 != 0 { return nil }
        guard bytes.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for c in bytes {
            guard let v = value(c, urlSafe: urlSafe) else { return nil }
            buffer = buffer << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero, or two texts would decode to the same bytes.
        if bits > 0 && buffer & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    private static func value(_ c: UInt8, urlSafe: Bool) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+") where !urlSafe: 62
        case UInt8(ascii: "/") where !urlSafe: 63
        case UInt8(ascii: "-") where urlSafe: 62
        case UInt8(ascii: "_") where urlSafe: 63
        default: nil
        }
    }
}
