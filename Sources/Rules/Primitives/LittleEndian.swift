/// The byte order of everything the endpoint writes to disk (the log, the summary checkpoint).
extension Array where Element == UInt8 {
    @inlinable public mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// The integer at `offset`, which the caller has checked lies within the array.
    @inlinable public func loadLE<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        withUnsafeBytes { $0.loadLE(type, at: offset) }
    }
}

extension UnsafeRawBufferPointer {
    @inlinable public func loadLE<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
