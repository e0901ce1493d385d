import Primitives
import Testing

@Suite struct BloomFilterTests {
    /// SplitMix64: fingerprints as uniform as SHA-256 prefixes, the same every run.
    struct Fingerprints {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func whatWasInsertedIsAlwaysFoundAndItsSizeNeverGrows() {
        var filter = BloomFilter(bits: 1 << 16)
        let bytes = filter.byteCount
        var source = Fingerprints(state: 1)
        let inserted = (0..<50_000).map { _ in source.next() }
        for f in inserted { filter.insert(f) }
        // Far past what it was made for: still no value inserted is missed, and not a byte more.
        #expect(inserted.allSatisfy { filter.contains($0) })
        #expect(filter.byteCount == bytes && bytes == 8_192)
        #expect(filter.falsePositiveRate > 0.9)
    }

    @Test func itsFalsePositiveRateIsWhatItSays() {
        // 2^20 bits holding m / 9.6 values: about 1 %.
        var filter = BloomFilter(bits: 1 << 20)
        var source = Fingerprints(state: 2)
        for _ in 0..<(1 << 20) * 10 / 96 { filter.insert(source.next()) }
        let stated = filter.falsePositiveRate
        #expect(stated > 0.006 && stated < 0.014)
        var fresh = Fingerprints(state: 3)
        let trials = 100_000
        let found = (0..<trials).filter { _ in filter.contains(fresh.next()) }.count
        let measured = Double(found) / Double(trials)
        #expect(abs(measured - stated) < 0.003, "measured \(measured), stated \(stated)")
    }

    @Test func insertSaysWhetherTheValueWasFoundBefore() {
        var filter = BloomFilter(bits: 4_096)
        let first = filter.insert(42)
        let second = filter.insert(42)
        #expect(first && !second)
        #expect(filter.insertions == 1 && filter.setBits == 7)
        #expect(filter.contains(42) && !filter.contains(43))
        // Sizes are powers of two, at least a word.
        #expect(BloomFilter(bits: 1).bitCount == 64 && BloomFilter(bits: 65).bitCount == 128)
    }
}
