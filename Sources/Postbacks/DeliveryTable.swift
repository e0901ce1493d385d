/// The postbacks the ledger holds in memory: 40 bytes each, in one array in the order they were
/// noted (ids rise, so an id is found by binary search), and an open-addressing index of 4-byte
/// slots by key. About 48 bytes a postback in all, where a dictionary by key beside an id index
/// took about 180, and no growth step doubles it at once.
///
/// Slots are never emptied one by one: a delivery that leaves is marked gone and its slot skipped,
/// until the index is rebuilt from the live deliveries (when it fills up, or once the oldest half
/// has left). The index hashes with Swift's per-process seeded hasher, so keys crafted to collide
/// in it cannot be made without knowing the seed.
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

    private(set) var entries: [Delivery] = []
    /// Every entry before it has left.
    private(set) var start = 0
    /// Entry index + 1 by key hash; 0 is empty.
    private var slots: [UInt32] = []
    /// Slots filled, by live entries or gone ones.
    private var used = 0
    /// Deliveries that have not left.
    private(set) var live = 0

    /// Bytes held: what the window costs.
    var bytes: Int { entries.capacity * MemoryLayout<Delivery>.stride + slots.capacity * 4 }

    mutating func append(_ delivery: Delivery) {
        if (used + 1) * 10 > slots.count * 7 { rebuild() }
        entries.append(delivery)
        insertSlot(entries.count - 1)
        live += 1
    }

    /// The live deliveries under `key`, oldest first, by index.
    func indexes(of key: DuplicateKeyHash) -> [Int] {
        guard !slots.isEmpty else { return [] }
        var found: [Int] = []
        let mask = slots.count - 1
        var i = key.hashValue & mask
        while slots[i] != 0 {
            let index = Int(slots[i]) - 1
            if entries[index].key == key && !entries[index].isGone { found.append(index) }
            i = (i + 1) & mask
        }
        return found.count > 1 ? found.sorted() : found
    }

    /// The live delivery with `id`, by index.
    func index(of id: UInt64) -> Int? {
        var low = start, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].id < id { low = mid + 1 } else { high = mid }
        }
        guard low < entries.count, entries[low].id == id, !entries[low].isGone else { return nil }
        return low
    }

    /// The first index at or after `start` whose id is at least `id`.
    func firstIndex(atLeast id: UInt64) -> Int {
        var low = start, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].id < id { low = mid + 1 } else { high = mid }
        }
        return low
    }

    subscript(index: Int) -> Delivery {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    /// Marks the delivery at `index` gone (a write that failed).
    mutating func remove(at index: Int) {
        guard !entries[index].isGone else { return }
        entries[index].bits |= Delivery.goneBit
        live -= 1
    }

    /// Lets the oldest deliveries go, up to id `through`, telling `leaving` each live one.
    mutating func leave(through id: UInt64, _ leaving: (Delivery) -> Void) {
        while start < entries.count, entries[start].id <= id {
            if !entries[start].isGone {
                leaving(entries[start])
                entries[start].bits |= Delivery.goneBit
                live -= 1
            }
            start += 1
        }
        // A first start without key tables holds every postback until they are written, then
        // only the window: the storage goes back once most of it has left.
        if start > 4096 && start * 2 > entries.count { rebuild() }
    }

    /// Keeps the live entries only and indexes them again, with room to grow.
    private mutating func rebuild() {
        if start > 0 || live < entries.count {
            var kept: [Delivery] = []
            kept.reserveCapacity(live + live / 4)
            for entry in entries[start...] where !entry.isGone { kept.append(entry) }
            entries = kept
            start = 0
        }
        var capacity = 16
        while capacity < 2 * (entries.count + 1) { capacity *= 2 }
        slots = [UInt32](repeating: 0, count: capacity)
        used = 0
        for index in entries.indices { insertSlot(index) }
    }

    private mutating func insertSlot(_ index: Int) {
        let mask = slots.count - 1
        var i = entries[index].key.hashValue & mask
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = UInt32(truncatingIfNeeded: index + 1)
        used += 1
    }
}
