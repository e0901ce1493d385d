/// Looks over a binary property list before Foundation reads it, because Foundation can be made
/// to crash by one: swift-corelibs-foundation's PropertyListSerialization aborts the process on
/// a set (`NSSet`) holding a dictionary (found by `Tests/Fuzz/PlistCheckFuzz.swift`). An
/// Info.plist never holds a set or a keyed archiver's UID, so a file with either is refused
/// before it is parsed, as is one whose structure this walk cannot follow.
///
/// A binary plist can also name one array from many places: 238 bytes of arrays that each hold
/// the one before twice are a tree of 2^40 nodes, which Foundation (and the check after it) would
/// spend minutes and gigabytes unfolding. So the walk counts the nodes of the tree the objects
/// unfold to, and refuses past `maxNodes`, a cycle, or nesting past `maxDepth`.
///
/// The format: `bplist00`, the objects, a table of their offsets, and a 32-byte trailer giving
/// the offsets' width, the references' width, the number of objects, the top object and where
/// the table starts. Every object is reached through the table, so reading each entry's marker
/// byte sees every object's type; arrays and dictionaries list their members by reference.
enum BinaryPlistScreen {
    /// Far above any Info.plist (a few thousand nodes with hundreds of SKAdNetworkItems).
    static let maxNodes = 200_000
    static let maxDepth = 256

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
        let referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            return "is a binary property list with an invalid trailer"
        }
        let count = bigEndian(bytes, at: trailer + 8, size: 8)
        let top = bigEndian(bytes, at: trailer + 16, size: 8)
        let table = bigEndian(bytes, at: trailer + 24, size: 8)
        guard count >= 1, count <= UInt64(bytes.count), top < count, table >= 8, table < UInt64(trailer),
              UInt64(trailer) - table >= count * UInt64(offsetSize) else {
            return "is a binary property list whose offset table does not fit"
        }
        var offsets: [Int] = []
        offsets.reserveCapacity(Int(count))
        for i in 0..<Int(count) {
            let offset = bigEndian(bytes, at: Int(table) + i * offsetSize, size: offsetSize)
            guard offset >= 8, offset < table else { return "is a binary property list with an object outside its data" }
            switch bytes[Int(offset)] >> 4 {
            case 0x8: return "holds a UID (a keyed archive), which no Info.plist has"
            case 0xC: return "holds a set, which no Info.plist has"
            case 0x7, 0x9, 0xB, 0xE, 0xF: return "holds an object of a type the format does not define"
            default: offsets.append(Int(offset))
            }
        }
        var walk = Walk(bytes: bytes, offsets: offsets, dataEnd: Int(table), referenceSize: referenceSize)
        return walk.nodes(of: Int(top), depth: 0) == nil ? walk.refusal : nil
    }

    /// The size of the tree under each object, each counted once (a shared object is counted
    /// wherever it is named, as Foundation unfolds it).
    private struct Walk {
        let bytes: [UInt8]
        let offsets: [Int]
        let dataEnd: Int
        let referenceSize: Int
        var sizes: [Int?]
        var open: Set<Int> = []
        var refusal = "is a binary property list whose objects cannot be followed"

        init(bytes: [UInt8], offsets: [Int], dataEnd: Int, referenceSize: Int) {
            self.bytes = bytes
            self.offsets = offsets
            self.dataEnd = dataEnd
            self.referenceSize = referenceSize
            sizes = Array(repeating: nil, count: offsets.count)
        }

        mutating func nodes(of object: Int, depth: Int) -> Int? {
            if let known = sizes[object] { return known }
            guard depth < maxDepth else {
                refusal = "is a binary property list nested more than \(maxDepth) deep"
                return nil
            }
            guard open.insert(object).inserted else {
                refusal = "is a binary property list whose objects hold themselves"
                return nil
            }
            defer { open.remove(object) }
            guard let children = try? members(of: object) else {
                refusal = "is a binary property list with a collection that names objects it does not have"
                return nil
            }
            var total = 1
            for child in children {
                guard let n = nodes(of: child, depth: depth + 1) else { return nil }
                total += n
                guard total <= maxNodes else {
                    refusal = "is a binary property list that unfolds to more than \(maxNodes) values"
                    return nil
                }
            }
            sizes[object] = total
            return total
        }

        /// The objects an array or dictionary names (a dictionary's keys and values); none for
        /// any other object. Throws when the references run past the data or name no object.
        func members(of object: Int) throws -> [Int] {
            let offset = offsets[object]
            let marker = bytes[offset]
            guard marker >> 4 == 0xA || marker >> 4 == 0xD else { return [] }
            var position = offset + 1
            var count = Int(marker & 0x0F)
            if count == 0x0F {
                guard position < dataEnd, bytes[position] >> 4 == 0x1 else { throw Unfollowable() }
                let size = 1 << Int(bytes[position] & 0x0F)
                guard size <= 8, position + 1 + size <= dataEnd else { throw Unfollowable() }
                let value = BinaryPlistScreen.bigEndian(bytes, at: position + 1, size: size)
                guard value <= UInt64(dataEnd) else { throw Unfollowable() }
                count = Int(value)
                position += 1 + size
            }
            let references = marker >> 4 == 0xD ? 2 * count : count
            guard position + references * referenceSize <= dataEnd else { throw Unfollowable() }
            var out: [Int] = []
            out.reserveCapacity(references)
            for i in 0..<references {
                let reference = BinaryPlistScreen.bigEndian(bytes, at: position + i * referenceSize, size: referenceSize)
                guard reference < UInt64(offsets.count) else { throw Unfollowable() }
                out.append(Int(reference))
            }
            return out
        }
    }

    private struct Unfollowable: Error {}

    static func bigEndian(_ bytes: [UInt8], at start: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for byte in bytes[start..<start + size] { value = value << 8 | UInt64(byte) }
        return value
    }
}
