import Primitives

/// What an app's conversion values mean: each fine value 0–63 (an event, a revenue range) and
/// each coarse value. The app sets the values; the schema is how the Apps view reads them back.
public struct ConversionValueSchema: Sendable, Equatable, Codable {
    /// Fine values, as non-overlapping ranges `from...to` within 0–63.
    public var fine: [FineRange]
    /// `low`, `medium` and `high`, each with its meaning; a missing one is shown as the word.
    public var coarse: [String: String]
    /// The fine value from which the coarse value is `medium`, and `high` (below: `low`), so that
    /// the conversion-value API can answer a coarse value; without it, it answers none.
    public var coarseFromFine: CoarseThresholds?
    /// When a window's answer is final, so that the app locks it and the postback leaves early.
    public var lockAt: Lock?

    public struct CoarseThresholds: Sendable, Equatable, Codable {
        public var medium: Int
        public var high: Int

        public init(medium: Int, high: Int) {
            self.medium = medium
            self.high = high
        }
    }

    public struct Lock: Sendable, Equatable, Codable {
        /// The first window locks once the fine value reaches this.
        public var fine: Int?
        /// The second and third windows lock once the coarse value reaches this.
        public var coarse: String?

        public init(fine: Int? = nil, coarse: String? = nil) {
            self.fine = fine
            self.coarse = coarse
        }
    }

    enum CodingKeys: String, CodingKey {
        case fine, coarse, coarseFromFine = "coarse_from_fine", lockAt = "lock_at"
    }

    public struct FineRange: Sendable, Equatable, Codable {
        public var from: Int
        public var to: Int
        public var meaning: String
        /// The in-app events this range stands for, if the schema counts events.
        public var events: [String]?
        /// The revenue this range stands for, if the schema counts revenue.
        public var revenue: Revenue?

        public init(from: Int, to: Int, meaning: String, events: [String]? = nil, revenue: Revenue? = nil) {
            self.from = from
            self.to = to
            self.meaning = meaning
            self.events = events
            self.revenue = revenue
        }
    }

    public struct Revenue: Sendable, Equatable, Codable {
        public var min: Double
        public var max: Double
        /// ISO 4217, e.g. `USD`.
        public var currency: String

        public init(min: Double, max: Double, currency: String) {
            self.min = min
            self.max = max
            self.currency = currency
        }
    }

    public init(fine: [FineRange] = [], coarse: [String: String] = [:], coarseFromFine: CoarseThresholds? = nil, lockAt: Lock? = nil) {
        self.fine = fine
        self.coarse = coarse
        self.coarseFromFine = coarseFromFine
        self.lockAt = lockAt
    }

    /// The meaning of a fine value, or nil when the schema does not name it.
    public func meaning(fine value: Int) -> String? {
        // `from <= to` is checked at registration, but a hand-edited apps.json is read as it is.
        fine.first { $0.from <= value && value <= $0.to }?.meaning
    }

    public func meaning(coarse value: String) -> String? {
        coarse[value]
    }

    /// The largest revenue amount a schema or an app's counters may name, in any currency: a
    /// trillion, far above any install's revenue, far below where arithmetic on it loses cents.
    public static let maxRevenue = 1e12
    static let maxRevenueText = "1e12"
    static let minRevenueSpan = 0.01

    /// Every rule of a schema, naming the field at fault.
    public func check() throws(RequestProblem) {
        for (i, range) in fine.enumerated() {
            let field = "schema.fine[\(i)]"
            guard (0...63).contains(range.from), (0...63).contains(range.to), range.from <= range.to else {
                throw .invalid(field, "out_of_range", "must have 0 ≤ from ≤ to ≤ 63 (6 bits); got \(range.from)–\(range.to)")
            }
            guard !range.meaning.isEmpty, range.meaning.utf8.count <= 100 else {
                throw .invalid(field + ".meaning", "invalid_name", "must be 1–100 bytes")
            }
            if let revenue = range.revenue {
                for (name, amount) in [("min", revenue.min), ("max", revenue.max)] {
                    guard amount.isFinite, amount.sign == .plus, amount <= Self.maxRevenue else {
                        throw .invalid(field + ".revenue." + name, "out_of_range",
                                       "must be an amount from 0 to \(Self.maxRevenueText); got \(amount)")
                    }
                }
                // A range narrower than a cent cannot be told apart by any purchase, and one of
                // 1e-300 made every revenue an overflow.
                // A cent, less what binary fractions lose: 0.30–0.31 is a cent wide, as 0.10–0.11 is.
                guard revenue.max - revenue.min >= Self.minRevenueSpan - 1e-9 else {
                    throw .invalid(field + ".revenue", "degenerate_range",
                                   "needs max at least 0.01 above min; got \(revenue.min)–\(revenue.max)")
                }
                guard revenue.currency.utf8.count == 3, revenue.currency.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else {
                    throw .invalid(field + ".revenue.currency", "invalid_currency", "must be an ISO 4217 code such as USD; got \"\(revenue.currency.prefix(10))\"")
                }
            }
            for other in fine[..<i] where other.from <= range.to && range.from <= other.to {
                throw .invalid(field, "overlapping_range", "\(range.from)–\(range.to) overlaps \(other.from)–\(other.to)")
            }
        }
        if let thresholds = coarseFromFine {
            guard (1...63).contains(thresholds.medium), (1...63).contains(thresholds.high), thresholds.medium <= thresholds.high else {
                throw .invalid("schema.coarse_from_fine", "out_of_range", "needs 1 ≤ medium ≤ high ≤ 63 (the fine values where medium and high begin); got \(thresholds.medium) and \(thresholds.high)")
            }
        }
        if let lock = lockAt {
            if let fine = lock.fine, !(0...63).contains(fine) {
                throw .invalid("schema.lock_at.fine", "out_of_range", "must be a fine value 0–63; got \(fine)")
            }
            if let coarse = lock.coarse {
                guard ["low", "medium", "high"].contains(coarse) else {
                    throw .invalid("schema.lock_at.coarse", "invalid_coarse_value", "must be low, medium or high")
                }
                guard coarseFromFine != nil else {
                    throw .invalid("schema.lock_at.coarse", "missing_field", "a coarse lock needs schema.coarse_from_fine, which says how coarse values are reached")
                }
            }
        }
        for (key, meaning) in coarse {
            guard ["low", "medium", "high"].contains(key) else {
                throw .invalid("schema.coarse.\(key)", "unknown_field", "coarse values are low, medium and high")
            }
            guard !meaning.isEmpty, meaning.utf8.count <= 100 else {
                throw .invalid("schema.coarse.\(key)", "invalid_name", "must be 1–100 bytes")
            }
        }
    }
}
