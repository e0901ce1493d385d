import Primitives

/// The on-disk framing of one log record.
///
/// ```
/// 0  u16  magic 0xA77E
/// 2  u8   kind, the owner's (`RecordKind`: 1 report, 2 trigger, 3 postback, 4 postback retry,
///         5 Apple Ads token, 6 Apple Ads call)
/// 3  u8   protocol tag, the owner's (`AttributionProtocol`: 1 PCM, …; 0 in the first
///         version's records, all PCM). The store keeps it and hands it back, nothing more.
/// 4  u32  payload length
/// 8  u32  CRC-32C of bytes 0..<8 and of the payload
/// 12 ...  payload
/// ```
/// All integers little-endian. The checksum covers the length, so a torn length field cannot
/// send replay off reading garbage as a record.
public enum LogRecord {
    public static let magic: UInt16 = 0xA77E
    public static let headerSize = 12
    /// Bodies are capped far below this; a larger length is corruption.
    public static let maxPayload = 128 << 10

    /// Appends one framed record whose payload `writePayload` appends in place, so the payload
    /// is never built in a buffer of its own.
    public static func append(kind: RecordKind, tag: UInt8, to out: inout [UInt8], writePayload: (inout [UInt8]) -> Void) {
        let start = out.count
        out.appendLE(magic)
        out.append(kind.number)
        out.append(tag)
        out.appendLE(UInt32(0))  // length, filled in below
        out.appendLE(UInt32(0))  // checksum, filled in below
        writePayload(&out)
        let length = UInt32(out.count - start - headerSize)
        out.withUnsafeMutableBytes { $0.storeBytes(of: length.littleEndian, toByteOffset: start + 4, as: UInt32.self) }
        let crc = out.withUnsafeBytes { buffer -> UInt32 in
            let head = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[start..<start + 8]))
            return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[(start + headerSize)...]), seed: head)
        }
        out.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: start + 8, as: UInt32.self) }
    }

    public enum Decoded {
        case record(kind: UInt8, tag: UInt8, payload: UnsafeRawBufferPointer, size: Int)
        /// The bytes so far are a valid beginning but the record does not fit in what was given.
        case incomplete
        case corrupt
    }

    /// Decodes the record at the start of `bytes`.
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> Decoded {
        guard bytes.count >= headerSize else {
            // A short tail is only a torn header if what there is looks like one.
            if bytes.count >= 2 && bytes.loadLE(UInt16.self, at: 0) != magic { return .corrupt }
            return .incomplete
        }
        guard bytes.loadLE(UInt16.self, at: 0) == magic else { return .corrupt }
        let length = Int(bytes.loadLE(UInt32.self, at: 4))
        guard length <= maxPayload else { return .corrupt }
        guard bytes.count >= headerSize + length else { return .incomplete }
        let head = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<8]))
        let payload = UnsafeRawBufferPointer(rebasing: bytes[headerSize..<headerSize + length])
        guard CRC32C.checksum(payload, seed: head) == bytes.loadLE(UInt32.self, at: 8) else { return .corrupt }
        return .record(kind: bytes[2], tag: bytes[3], payload: payload, size: headerSize + length)
    }
}
