import Primitives

/// One day's conversions at one site, by ad network, campaign, app (as numbers, `NameTable`) and
/// conversion value (`AppsSummary.ValueCode`), with 32-bit counts: about 7 bytes a row once the day is over (`freeze`), where strings keyed to
/// a dictionary of kinds took about 400. A top app's day can hold 10,000 campaigns (a four-digit
/// `source-identifier` per ad network), and a year keeps every day.
struct ConversionTable {
    struct Key: Hashable, Comparable {
        var network: UInt32
        var campaign: UInt32
        var app: UInt32
        /// 0: no value; the rest as `AppsSummary.ValueCode` numbers them.
        var value: UInt32 = 0

        static func < (a: Key, b: Key) -> Bool { (a.network, a.campaign, a.app, a.value) < (b.network, b.campaign, b.app, b.value) }
    }

    struct Counts {
        var installs: UInt32 = 0
        var redownloads: UInt32 = 0
        var reEngagements: UInt32 = 0
        /// Accepted postbacks of any window: what the campaign × value table counts.
        var postbacks: UInt32 = 0

        init(_ counts: AppsSummary.ConversionCounts) {
            installs = UInt32(clamping: counts.installs)
            redownloads = UInt32(clamping: counts.redownloads)
            reEngagements = UInt32(clamping: counts.reEngagements)
            postbacks = UInt32(clamping: counts.postbacks)
        }

        /// Saturating: no day holds four billion installs of one campaign, and a forged digest
        /// must not trap.
        mutating func add(_ other: Counts) {
            installs +|= other.installs
            redownloads +|= other.redownloads
            reEngagements +|= other.reEngagements
            postbacks +|= other.postbacks
        }

        var summary: AppsSummary.ConversionCounts {
            AppsSummary.ConversionCounts(installs: Int(installs), redownloads: Int(redownloads), reEngagements: Int(reEngagements),
                                         postbacks: Int(postbacks))
        }
    }

    /// Rows of a day still being counted, and those counted into a day after it was frozen
    /// (a clock set back); the next `freeze` folds them in.
    private var open: [Key: Counts] = [:]
    /// Rows of a day over, sorted by key, as variable-length numbers: a flags byte, the key as its
    /// difference from the row before, then the counts that are not zero. About 5 bytes a row,
    /// where a row in memory takes 32 and its slot; a year of a top app's campaigns is history the view must keep.
    private var frozen: [UInt8] = []
    private var frozenRows = 0

    mutating func add(_ key: Key, _ counts: Counts) {
        open[key, default: Counts(AppsSummary.ConversionCounts())].add(counts)
    }

    /// Folds the open rows into the frozen ones: for a day no postback is stored on any more.
    mutating func freeze() {
        guard !open.isEmpty else { return }
        var rows = open
        forEachFrozen { key, counts in rows[key, default: Counts(AppsSummary.ConversionCounts())].add(counts) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(rows.count * 8)
        var previous = Key(network: 0, campaign: 0, app: 0)
        for (key, counts) in rows.sorted(by: { $0.key < $1.key }) {
            // A flags byte says what follows: most rows share the row before's ad network and app,
            // and have one or two counts that are not zero. Sorted, so every difference taken is
            // at least zero.
            let sameNetwork = key.network == previous.network
            var flags: UInt8 = sameNetwork ? 0 : Self.networkChanges
            if key.app != previous.app { flags |= Self.appChanges }
            for (bit, n) in [counts.installs, counts.redownloads, counts.reEngagements, counts.postbacks].enumerated() where n != 0 {
                flags |= Self.countFollows << UInt8(bit)
            }
            bytes.append(flags)
            if !sameNetwork { Self.append(key.network &- previous.network, to: &bytes) }
            Self.append(sameNetwork ? key.campaign &- previous.campaign : key.campaign, to: &bytes)
            if key.app != previous.app { Self.append(key.app, to: &bytes) }
            Self.append(key.value, to: &bytes)
            for n in [counts.installs, counts.redownloads, counts.reEngagements, counts.postbacks] where n != 0 { Self.append(n, to: &bytes) }
            previous = key
        }
        // Exactly as long as written: a year of days keeps every one.
        frozen = bytes.withUnsafeBufferPointer { [UInt8]($0) }
        frozenRows = rows.count
        open = [:]
    }

    /// Rows held (one frozen and counted into again since counts twice), and about the bytes they
    /// take (an open row's dictionary slot counted at twice its size).
    var rows: Int { frozenRows + open.count }
    var bytes: Int { frozen.capacity + open.capacity * 2 * (MemoryLayout<Key>.stride + MemoryLayout<Counts>.stride) }

    /// Every row; a key frozen and counted again since is visited twice, and the counts add up.
    func forEach(_ visit: (Key, Counts) -> Void) {
        forEachFrozen(visit)
        for (key, counts) in open { visit(key, counts) }
    }

    private func forEachFrozen(_ visit: (Key, Counts) -> Void) {
        var at = 0
        var previous = Key(network: 0, campaign: 0, app: 0)
        var counts = Counts(AppsSummary.ConversionCounts())
        while at < frozen.count {
            let flags = frozen[at]
            at += 1
            var key = previous
            if flags & Self.networkChanges != 0 {
                key.network = previous.network &+ Self.read(frozen, &at)
                key.campaign = Self.read(frozen, &at)
            } else {
                key.campaign = previous.campaign &+ Self.read(frozen, &at)
            }
            if flags & Self.appChanges != 0 { key.app = Self.read(frozen, &at) }
            key.value = Self.read(frozen, &at)
            func count(_ bit: UInt8) -> UInt32 { flags & (Self.countFollows << bit) != 0 ? Self.read(frozen, &at) : 0 }
            counts.installs = count(0)
            counts.redownloads = count(1)
            counts.reEngagements = count(2)
            counts.postbacks = count(3)
            visit(key, counts)
            previous = key
        }
    }

    /// A frozen row's flags: the ad network differs from the row before's (its difference
    /// follows, then the campaign whole, not as a difference); the app differs (it follows whole);
    /// and from bit 2 on, which of the four counts follow (the others are zero).
    private static let networkChanges: UInt8 = 1
    private static let appChanges: UInt8 = 2
    private static let countFollows: UInt8 = 4

    /// Seven bits a byte, low first; the high bit says another follows.
    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Only what `append` wrote is read: the bytes never come from outside.
    private static func read(_ bytes: [UInt8], _ at: inout Int) -> UInt32 {
        var value: UInt32 = 0
        var shift: UInt32 = 0
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            if shift < 32 { value |= UInt32(byte & 0x7F) << shift }
            if byte < 0x80 { break }
            shift += 7
        }
        return value
    }
}
