/// The postbacks the ledger holds in memory: 40 bytes each, in the order they were noted (ids
/// rise, so an id is found by binary search), and an open-addressing index of 4-byte slots by key.
/// 46 to 48 bytes a postback in all, where a dictionary by key beside an id index took about 180.
///
/// Deliveries live in chunks of 65,536 at positions that never move: the window grows a chunk at a
/// time and the oldest chunks are let go whole, so no growth step copies the window (a start that
/// takes 1.2 million postbacks would otherwise hold the old array and its double at once).
///
/// Slots are never emptied one by one: a delivery that leaves is marked gone (or falls before
/// `start`) and its slot skipped, until the index is rebuilt from the live deliveries (when it
/// fills up, or is mostly empty). The index hashes with Swift's per-process seeded hasher, so keys
/// crafted to collide in it cannot be made without knowing the seed.
struct DeliveryTable {
    struct Delivery {
        var key: DuplicateKeyHash
        var id: UInt64
        var contentHash: UInt64
        var retries: UInt32
        /// The UTC day it was stored (`PostbackOrigin.day`), clamped into 0...65535: 1970 to 2149.
        var day: UInt16
        /// Low 14 bits: the number of the site it was sent to (`DeliveryTable.siteLimit` for one
        /// past the limit); `verifiedBit`; `goneBit`.
        var bits: UInt16

        static let verifiedBit: UInt16 = 1 << 14
        static let goneBit: UInt16 = 1 << 15

        init(key: DuplicateKeyHash, id: UInt64, contentHash: UInt64, verified: Bool, day: Int32, site: UInt16) {
            self.key = key
            self.id = id
            self.contentHash = contentHash
            self.retries = 0
            self.day = UInt16(clamping: day)
            self.bits = min(site, DeliveryTable.siteLimit) | (verified ? Self.verifiedBit : 0)
        }

        var verified: Bool { bits & Self.verifiedBit != 0 }
        var isGone: Bool { bits & Self.goneBit != 0 }
        var site: UInt16 { bits & 0x3FFF }
    }

    /// Sites past this many are one "other site" (served sites are configured; there are a few).
    static let siteLimit: UInt16 = 0x3FFF
    static let chunkBits = 16
    static let chunkSize = 1 << chunkBits

    /// `chunks[0]` holds positions from `dropped * chunkSize`.
    private var chunks: [[Delivery]] = []
    private var dropped = 0
    /// Just after the last position used.
    private(set) var end = 0
    /// Every delivery before this position has left.
    private(set) var start = 0
    /// Position + 1 by key hash; 0 is empty.
    private var slots: [UInt32] = []
    /// Slots filled, by live deliveries or gone ones.
    private var used = 0
    /// Deliveries that have not left.
    private(set) var live = 0

    /// Bytes held: what the window costs.
    var bytes: Int { chunks.count * Self.chunkSize * MemoryLayout<Delivery>.stride + slots.count * 4 }

    subscript(position: Int) -> Delivery {
        get { chunks[(position >> Self.chunkBits) - dropped][position & (Self.chunkSize - 1)] }
        set { chunks[(position >> Self.chunkBits) - dropped][position & (Self.chunkSize - 1)] = newValue }
    }

    mutating func append(_ delivery: Delivery) {
        if (used + 1) * 10 > slots.count * 7 { reindex() }
        if end >> Self.chunkBits >= dropped + chunks.count {
            var chunk: [Delivery] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(delivery)
        end += 1
        insertSlot(end - 1)
        live += 1
    }

    /// The live deliveries under `key`, oldest first, by position.
    func positions(of key: DuplicateKeyHash) -> [Int] {
        guard !slots.isEmpty else { return [] }
        var found: [Int] = []
        var i = home(of: key)
        while slots[i] != 0 {
            let position = Int(slots[i]) - 1
            if position >= start, self[position].key == key, !self[position].isGone { found.append(position) }
            i += 1
            if i == slots.count { i = 0 }
        }
        return found.count > 1 ? found.sorted() : found
    }

    /// The live delivery with `id`, by position.
    func position(of id: UInt64) -> Int? {
        let at = firstPosition(atLeast: id)
        guard at < end, self[at].id == id, !self[at].isGone else { return nil }
        return at
    }

    /// The first position at or after `start` whose id is at least `id`.
    func firstPosition(atLeast id: UInt64) -> Int {
        var low = start, high = end
        while low < high {
            let mid = (low + high) / 2
            if self[mid].id < id { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Marks the delivery at `position` gone (a write that failed).
    mutating func remove(at position: Int) {
        guard !self[position].isGone else { return }
        self[position].bits |= Delivery.goneBit
        live -= 1
    }

    /// Lets the oldest deliveries go, up to id `through`, telling `leaving` each live one.
    mutating func leave(through id: UInt64, _ leaving: (Delivery) -> Void) {
        while start < end, self[start].id <= id {
            if !self[start].isGone {
                leaving(self[start])
                live -= 1
            }
            start += 1
        }
        let whole = (start >> Self.chunkBits) - dropped
        if whole > 0 {
            chunks.removeFirst(whole)
            dropped += whole
        }
        // The index follows: a first start without key tables holds every postback until they
        // are written, then only the window.
        if slots.count > 64 && live * 8 < slots.count { reindex() }
    }

    /// Indexes the live deliveries again, in slots for twice as many.
    private mutating func reindex() {
        // Twice the live deliveries, not the next power of two: the window's index then takes
        // 8 bytes a postback, never up to 16 (a home slot is found by multiplying, not masking).
        let capacity = max(16, 2 * (live + 1))
        slots = []
        slots = [UInt32](repeating: 0, count: capacity)
        used = 0
        for position in start..<end where !self[position].isGone { insertSlot(position) }
    }

    /// The slot where a key's probe begins: its hash scaled into the slots (Lemire's multiply-shift).
    private func home(of key: DuplicateKeyHash) -> Int {
        Int(truncatingIfNeeded: UInt64(UInt(bitPattern: key.hashValue)).multipliedFullWidth(by: UInt64(slots.count)).high)
    }

    private mutating func insertSlot(_ position: Int) {
        var i = home(of: self[position].key)
        while slots[i] != 0 {
            i += 1
            if i == slots.count { i = 0 }
        }
        // Positions pass 2^32 only after four billion postbacks in one run (eleven thousand years
        // at a million a day); a slot read back is always checked by key.
        slots[i] = UInt32(truncatingIfNeeded: position + 1)
        used += 1
    }
}
