/// A token's public id (`GET /apple-ads/attribution/{id}`) as two 64-bit halves, not its 32 hex
/// digits: the outbox keeps a day of them.
struct AppleAdsPublicID: Hashable, Sendable {
    var high: UInt64
    var low: UInt64

    init(bytes: [UInt8]) {
        var high: UInt64 = 0, low: UInt64 = 0
        for (i, byte) in bytes.prefix(16).enumerated() {
            if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.high = high
        self.low = low
    }

    /// Nil unless `text` is 32 lowercase hex digits, as the endpoint writes them.
    init?(text: String) {
        let digits = Array(text.utf8)
        guard digits.count == 32 else { return nil }
        var halves: [UInt64] = [0, 0]
        for (i, c) in digits.enumerated() {
            let value: UInt64
            switch c {
            case 0x30...0x39: value = UInt64(c - 0x30)
            case 0x61...0x66: value = UInt64(c - 0x61 + 10)
            default: return nil
            }
            halves[i / 16] = halves[i / 16] << 4 | value
        }
        high = halves[0]
        low = halves[1]
    }
}
