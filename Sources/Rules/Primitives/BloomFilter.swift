/// A Bloom filter over 64-bit fingerprints that are already uniform (SHA-256 prefixes): `insert`
/// says whether every bit was set before, so a value inserted once is always found again (no
/// false negative), and a value never inserted is found with the probability `falsePositiveRate`.
///
/// Its size is fixed when it is made: whatever is inserted, it never grows. The bit positions come
/// from the fingerprint by double hashing (Kirsch and Mitzenmacher, "Less hashing, same
/// performance", 2006), so no other hash is computed.
public struct BloomFilter: Sendable, Equatable {
    private var words: [UInt64]
    private let bitMask: UInt64
    public let hashes: Int
    /// Bits set, kept as they are set: the false-positive rate without a pass over the words.
    public private(set) var setBits: Int = 0
    /// Values inserted that were not found before.
    public private(set) var insertions: Int = 0

    /// `bits` is rounded up to a power of two (at least 64).
    public init(bits: Int, hashes: Int = 7) {
        var size = 64
        while size < bits { size <<= 1 }
        words = [UInt64](repeating: 0, count: size / 64)
        bitMask = UInt64(size - 1)
        self.hashes = max(1, hashes)
    }

    public var bitCount: Int { words.count * 64 }
    public var byteCount: Int { words.count * 8 }

    /// The chance that a value never inserted is found, as the filter is now.
    public var falsePositiveRate: Double {
        var rate = 1.0
        let fill = Double(setBits) / Double(bitCount)
        for _ in 0..<hashes { rate *= fill }
        return rate
    }

    public func contains(_ fingerprint: UInt64) -> Bool {
        var found = true
        forEachBit(of: fingerprint) { word, bit in found = found && words[word] & bit != 0 }
        return found
    }

    /// Sets the fingerprint's bits; true when it was not found before.
    @discardableResult
    public mutating func insert(_ fingerprint: UInt64) -> Bool {
        var fresh = false
        forEachBit(of: fingerprint) { word, bit in
            if words[word] & bit == 0 {
                words[word] |= bit
                setBits += 1
                fresh = true
            }
        }
        if fresh { insertions += 1 }
        return fresh
    }

    private func forEachBit(of fingerprint: UInt64, _ body: (Int, UInt64) -> Void) {
        let first = fingerprint & 0xFFFF_FFFF
        // Odd, so that every step visits a new position in a power-of-two table.
        let step = (fingerprint >> 32) | 1
        for i in 0..<UInt64(hashes) {
            let position = (first &+ i &* step) & bitMask
            body(Int(position >> 6), 1 << (position & 63))
        }
    }
}
