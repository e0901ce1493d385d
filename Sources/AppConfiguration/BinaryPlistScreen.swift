/// Looks over a binary property list before Foundation reads it, because Foundation can be made
/// to crash by one: swift-corelibs-foundation's PropertyListSerialization aborts the process on
/// a set (`NSSet`) holding a dictionary (found by `Tests/Fuzz/PlistCheckFuzz.swift`). An
/// Info.plist never holds a set or a keyed archiver's UID, so a file with either is refused
/// before it is parsed, as is one whose structure this walk cannot follow.
///
/// The format: `bplist00`, the objects, a table of their offsets, and a 32-byte trailer giving
/// the offsets' width, the number of objects and where the table starts. Every object is reached
/// through the table, so reading each entry's marker byte sees every object's type.
enum BinaryPlistScreen {
    static let magic = Array("bplist".utf8)

    /// Why `bytes`, a binary property list by its first bytes, must not reach Foundation; nil
    /// when it may, or when it is not binary at all.
    static func refusal(_ bytes: [UInt8]) -> String? {
        guard bytes.starts(with: magic) else { return nil }
        guard bytes.starts(with: Array("bplist00".utf8)) else { return "is a binary property list of a version other than 00" }
        let trailerSize = 32
        guard bytes.count >= 8 + trailerSize else { return "is a binary property list too short for its trailer" }
        let trailer = bytes.count - trailerSize
        let offsetSize = Int(bytes[trailer + 6])
        guard (1...8).contains(offsetSize), (1...8).contains(Int(bytes[trailer + 7])) else {
            return "is a binary property list with an invalid trailer"
        }
        let count = bigEndian(bytes, at: trailer + 8, size: 8)
        let table = bigEndian(bytes, at: trailer + 24, size: 8)
        guard count >= 1, count <= UInt64(bytes.count), table >= 8, table < UInt64(trailer),
              UInt64(trailer) - table >= count * UInt64(offsetSize) else {
            return "is a binary property list whose offset table does not fit"
        }
        for i in 0..<Int(count) {
            let offset = bigEndian(bytes, at: Int(table) + i * offsetSize, size: offsetSize)
            guard offset >= 8, offset < table else { return "is a binary property list with an object outside its data" }
            switch bytes[Int(offset)] >> 4 {
            case 0x8: return "holds a UID (a keyed archive), which no Info.plist has"
            case 0xC: return "holds a set, which no Info.plist has"
            case 0x7, 0x9, 0xB, 0xE, 0xF: return "holds an object of a type the format does not define"
            default: continue
            }
        }
        return nil
    }

    private static func bigEndian(_ bytes: [UInt8], at start: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in bytes[start..<start + size] { value = value << 8 | UInt64(byte) }
        return value
    }
}
