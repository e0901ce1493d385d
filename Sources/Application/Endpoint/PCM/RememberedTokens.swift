import Primitives

/// The verified tokens of one PCM token key, by fingerprint: the set a replay is looked up in.
///
/// Exact up to `exactBound` tokens. A key that signs more (a large site over a long key period,
/// or a stranger who asks the public signing path for tokens and reports each) goes on in a Bloom
/// filter of fixed size beside the exact set. Memory per key is then bounded whatever is sent,
/// and a replay is still never missed: a token the filter finds is quarantined as
/// `…_token_possibly_replayed`, never dropped. The price is that a fresh token is found by mistake
/// now and then (`BloomFilter.falsePositiveRate`, about 1 in 100 once the filter holds
/// `filterCapacity` tokens), and it climbs past that; rotating the key (`--token-key-rotation-days`)
/// starts a new set.
struct RememberedTokens: Sendable {
    /// 262,144 fingerprints: about 4 MiB in a `Set<UInt64>`.
    static let defaultExactBound = 262_144
    /// 2^25 bits, 4 MiB, 7 positions per token.
    static let defaultFilterBits = 1 << 25
    /// What the filter takes at about a 1 % false-positive rate: m / 9.6 for 7 positions.
    static var filterCapacity: Int { defaultFilterBits * 10 / 96 }

    enum Lookup: Equatable { case absent, present, possiblyPresent }

    private(set) var exact: Set<UInt64> = []
    private(set) var filter: BloomFilter?
    let exactBound: Int
    let filterBits: Int

    init(exactBound: Int = defaultExactBound, filterBits: Int = defaultFilterBits) {
        self.exactBound = exactBound
        self.filterBits = filterBits
    }

    func lookup(_ fingerprint: UInt64) -> Lookup {
        if exact.contains(fingerprint) { return .present }
        if let filter, filter.contains(fingerprint) { return .possiblyPresent }
        return .absent
    }

    /// Remembers the fingerprint unless it is (or may be) here already, and says which.
    mutating func insert(_ fingerprint: UInt64) -> Lookup {
        let found = lookup(fingerprint)
        guard found == .absent else { return found }
        if exact.count < exactBound {
            exact.insert(fingerprint)
        } else {
            if filter == nil { filter = BloomFilter(bits: filterBits) }
            filter?.insert(fingerprint)
        }
        return .absent
    }

    /// Forgets a fingerprint of a report that was not stored. One in the filter stays: a filter
    /// cannot forget, so the browser's next delivery of that report would be quarantined as
    /// possibly replayed (kept, not lost).
    mutating func remove(_ fingerprint: UInt64) {
        exact.remove(fingerprint)
    }

    /// Tokens remembered: the exact ones and those the filter took.
    var count: Int { exact.count + (filter?.insertions ?? 0) }
    /// Tokens only the filter holds.
    var approximateCount: Int { filter?.insertions ?? 0 }
    var filterBytes: Int { filter?.byteCount ?? 0 }
}
