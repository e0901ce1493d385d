/// A postback's duplicate key (`Postback.duplicateKey`) as two 64-bit FNV-1a hashes over its
/// UTF-8, one forwards and one backwards from other offset bases. The ledger keeps 16 bytes per
/// postback in memory instead of the key's text; a key table on disk sorts by `disk` alone, and
/// every match there is confirmed against the record itself. Stored on disk (tables, digests), so
/// the definition must never change.
public struct DuplicateKeyHash: Hashable, Sendable {
    public var disk: UInt64
    public var other: UInt64

    public init(disk: UInt64, other: UInt64) {
        self.disk = disk
        self.other = other
    }

    public init(_ key: String) {
        var forwards: UInt64 = 0xcbf2_9ce4_8422_2325
        var backwards: UInt64 = 0x8422_2325_cbf2_9ce4
        var key = key
        key.withUTF8 { bytes in
            for byte in bytes {
                forwards = (forwards ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            for byte in bytes.reversed() {
                backwards = (backwards ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
        }
        disk = forwards
        other = backwards
    }
}
