import Primitives

/// What the first `end` bytes of the log hold, in a form that changes when any record in them
/// changes: state derived from the log (the summary's checkpoint) keeps the prefix it was derived
/// from, and is trusted only while the log still begins with exactly that prefix.
///
/// The digest folds every record's checksum and size in order, so a record edited, removed,
/// damaged, reordered or replaced (a log restored from elsewhere) gives another digest. It guards
/// against accidents, not an attacker who can write the data directory.
public struct LogPrefix: Sendable, Equatable, CustomStringConvertible {
    /// The offset just after the prefix's last record.
    public var end: Int
    /// Records of every kind in the prefix.
    public var records: Int
    public var digest: UInt64

    public init(end: Int, records: Int, digest: UInt64) {
        self.end = end
        self.records = records
        self.digest = digest
    }

    public static let empty = LogPrefix(end: 0, records: 0, digest: 0x243F_6A88_85A3_08D3)

    /// The prefix extended by the record of `size` bytes with `checksum` that ends at `end`.
    mutating func fold(checksum: UInt32, size: Int, end: Int) {
        // splitmix64's finaliser over the running value and the record: order-sensitive and well mixed.
        var z = digest ^ (UInt64(checksum) << 32 | UInt64(UInt32(truncatingIfNeeded: size)))
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        digest = (z ^ (z >> 31)) &+ 0x9E37_79B9_7F4A_7C15
        records += 1
        self.end = end
    }

    /// Folds every record of `bytes` (whole framed records, as a commit writes them) that starts at `start`.
    mutating func fold(records bytes: [UInt8], at start: Int) {
        bytes.withUnsafeBytes { buffer in
            var i = 0
            while i + LogRecord.headerSize <= buffer.count {
                let size = LogRecord.headerSize + Int(buffer.loadLE(UInt32.self, at: i + 4))
                fold(checksum: buffer.loadLE(UInt32.self, at: i + 8), size: size, end: start + i + size)
                i += size
            }
        }
    }

    public var description: String { "\(records) records to byte \(end), digest \(String(digest, radix: 16))" }
}
