import Primitives

/// Revenue estimated from conversion-value ranges: each postback whose fine value the app's schema
/// gives a revenue range adds that range's low and high ends. An estimate from what the schema
/// says a value stands for, never a measured amount: the value says a purchase fell in a range.
public struct RevenueEstimate: Sendable, Equatable, Codable {
    /// Postbacks whose value has a revenue range.
    public var postbacks = 0
    public var low = 0.0
    public var high = 0.0
    /// The middle of each range, added up.
    public var middle: Double { (low + high) / 2 }

    public init() {}

    public mutating func add(_ range: ConversionValueSchema.Revenue, postbacks count: Int) {
        guard count > 0 else { return }
        postbacks +|= count
        // A range is at most 1e12 (the schema's rule) and a count below 2^63: the product is
        // finite in a Double.
        low += range.min * Double(count)
        high += range.max * Double(count)
    }

    public mutating func add(_ other: RevenueEstimate) {
        postbacks +|= other.postbacks
        low += other.low
        high += other.high
    }
}

extension ConversionValueSchema {
    /// The revenue range a fine value stands for, if its range names one.
    public func revenue(fine value: Int) -> Revenue? {
        fine.first { $0.from <= value && value <= $0.to }?.revenue
    }
}
