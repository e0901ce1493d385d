/// Turns bytes into Strings, reusing the String for bytes seen before: a log holds the same few
/// sites, reasons and campaign names millions of times.
public struct InternedStrings: Sendable {
    private var entries: [(bytes: [UInt8], string: String)] = []

    public init() {}

    public mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        for entry in entries where entry.bytes.count == bytes.count && entry.bytes.elementsEqual(bytes) {
            return entry.string
        }
        let string = String(decoding: bytes, as: UTF8.self)
        if entries.count < 256 { entries.append((Array(bytes), string)) }
        return string
    }

    public mutating func string(_ bytes: UnsafeRawBufferPointer) -> String {
        string(bytes.assumingMemoryBound(to: UInt8.self))
    }
}
