/// Bytes written through a pointer into memory made once, with one bounds check per piece: none
/// of an array's uniqueness and growth checks, which a row of thirty pieces pays thirty times (the
/// ClickHouse export writes one per record at the node's full ingest rate). A piece that does not
/// fit is not written, and `overflowed` says so: the writer's owner then takes another way.
public struct ByteWriter {
    private let memory: UnsafeMutableRawBufferPointer
    public private(set) var count = 0
    public private(set) var overflowed = false

    public init(_ memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    /// What has been written.
    public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: memory[0..<count]) }

    public mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard !overflowed, bytes.count <= memory.count - count else {
            overflowed = true
            return
        }
        UnsafeMutableRawBufferPointer(rebasing: memory[count..<(count + bytes.count)]).copyMemory(from: bytes)
        count += bytes.count
    }

    public mutating func put(_ literal: StaticString) {
        literal.withUTF8Buffer { put(UnsafeRawBufferPointer($0)) }
    }

    public mutating func put(_ byte: UInt8) {
        guard !overflowed, count < memory.count else {
            overflowed = true
            return
        }
        memory[count] = byte
        count += 1
    }

    /// As `String(value)` spells it.
    public mutating func putDecimal(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { d in
            var rest = value
            var i = d.count
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                rest /= 10
            } while rest > 0
            put(UnsafeRawBufferPointer(rebasing: d[i...]))
        }
    }

    public mutating func putDecimal(_ value: Int64) {
        if value < 0 { put(UInt8(ascii: "-")) }
        putDecimal(value.magnitude)
    }
}
