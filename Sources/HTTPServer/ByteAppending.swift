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
        var width = 1
        var rest = value / 10
        while rest > 0 {
            width += 1
            rest /= 10
        }
        let base = count
        append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var v = value
        for i in stride(from: base + width - 1, through: base, by: -1) {
            self[i] = UInt8(ascii: "0") + UInt8(v % 10)
            v /= 10
        }
    }
}
