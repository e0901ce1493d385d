/// How long a log consumer waits before trying its destination again after the `failures`-th
/// failure in a row: doubling from `first` up to `longest`, each wait shortened by up to a quarter
/// at random so that nodes that lost a destination together do not all come back in the same
/// instant. The longest wait is short by default (5 s): a failed attempt costs one connection, and
/// a backlog starts to drain within seconds of the destination's return.
public struct RetrySchedule: Sendable {
    public var first: Double
    public var longest: Double

    public init(first: Double = 0.5, longest: Double = 5) {
        self.first = first
        self.longest = longest
    }

    /// `jitter` in [0, 1): the fraction of the quarter taken off.
    public func delay(afterFailures failures: Int, jitter: Double) -> Double {
        guard failures > 0 else { return 0 }
        // 2^n overflows nothing below 63; past 30 the cap has long been reached.
        let doubled = first * Double(1 << min(failures - 1, 30))
        let capped = min(doubled, longest)
        return capped * (1 - 0.25 * min(max(jitter, 0), 0.999_999))
    }
}
