/// Decimal digits written straight into bytes, as `String(value)` spells them: for writers that
/// emit a number per record at the rate records are exported, where making a String each time
/// shows in the profile.
extension Array where Element == UInt8 {
    public mutating func appendDecimal(_ value: UInt64) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        let start = count
        append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        rest = value
        var i = start + digits - 1
        while rest > 0 {
            self[i] = UInt8(truncatingIfNeeded: 48 + rest % 10)
            rest /= 10
            i -= 1
        }
    }

    public mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude)
    }
}
