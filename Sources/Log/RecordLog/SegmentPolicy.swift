/// When the store seals its active segment and begins another: at a size, and at the first record
/// of each UTC day, so that retention removes whole days and a segment's age is its last day's.
public struct SegmentPolicy: Sendable {
    /// Bytes of records in one segment at most (a single batch larger than this still goes whole).
    public var maxBytes: Int
    public var rollsDaily: Bool

    public static let defaultMaxBytes = 256 << 20

    public init(maxBytes: Int = defaultMaxBytes, rollsDaily: Bool = true) {
        self.maxBytes = max(1, maxBytes)
        self.rollsDaily = rollsDaily
    }

    static let dayMilliseconds: Int64 = 86_400_000

    /// The UTC day of a receive time, rounding down before 1970 too.
    static func day(of milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / dayMilliseconds : -1 - (-1 - milliseconds) / dayMilliseconds
    }
}
