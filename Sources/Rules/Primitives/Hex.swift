/// Lowercase hexadecimal text of bytes, two digits each. `String(format: "%02x")` per byte costs
/// microseconds through Foundation: a start spent most of its Apple Ads time on it (16 bytes of
/// public id for each of a day's 100,000 tokens), and so did each segment's digest.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func text(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A lowercase hex digit, as `text` writes them.
    public static func isDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }
}
