/// Appending text to byte buffers without going through `String.UTF8View`'s generic iteration:
/// every response is assembled this way, and a copy of contiguous bytes is one `memcpy`.
extension Array where Element == UInt8 {
    public mutating func append(ascii text: StaticString) {
        text.withUTF8Buffer { append(contentsOf: $0) }
    }

    public mutating func append(utf8 text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { append(contentsOf: $0) }
        if copied == nil { append(contentsOf: text.utf8) }
    }

    /// Appends `value` in decimal without creating a String.
    public mutating func append(decimal value: Int) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            if value == .min {
                append(ascii: "9223372036854775808")
                return
            }
            append(decimal: -value)
            return
        }
        // Digits are written from the end of a stack buffer and copied in one go: this runs
        // several times for every response and access-log line.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var v = value
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                v /= 10
            } while v > 0
            append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
