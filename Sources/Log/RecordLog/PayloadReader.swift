/// Reads a record's payload front to back; every read is nil past the end.
public struct PayloadReader {
    let bytes: UnsafeRawBufferPointer
    public private(set) var offset = 0

    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    public mutating func u8() -> UInt8? {
        guard offset + 1 <= bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16() -> UInt16? { fixed(UInt16.self) }
    public mutating func u32() -> UInt32? { fixed(UInt32.self) }
    public mutating func u64() -> UInt64? { fixed(UInt64.self) }

    private mutating func fixed<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        guard offset + MemoryLayout<T>.size <= bytes.count else { return nil }
        defer { offset += MemoryLayout<T>.size }
        return bytes.loadLE(T.self, at: offset)
    }

    public mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, offset + count <= bytes.count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    public mutating func text(_ count: Int) -> String? {
        bytes(count).map { String(decoding: $0, as: UTF8.self) }
    }

    public mutating func text16() -> String? {
        guard let length = u16() else { return nil }
        return text(Int(length))
    }
}
