import Primitives

/// The conversion value an app should set now, from its counters and its registered schema: what
/// a measurement partner's "next conversion value" server answers, as a pure function.
///
/// - A fine range is reached when each of its `events` happened at least once and, if it has a
///   `revenue`, when the revenue in that currency is above zero and at least its `min`. A range
///   with neither is reached at install. Within a range, each further occurrence of its events
///   moves one value up, and revenue moves up in proportion from `min` to `max`; the answer is
///   the highest value reached.
/// - SKAdNetwork 4 and AdAttributionKit count three windows from first launch: days 0–2 (until
///   48 h), 3–7 (until 168 h) and 8–35 (until 840 h). A fine value is answered only in the first;
///   the coarse value in each (from `coarse_from_fine`). The window locks when `lock_at` is
///   reached.
/// - Before SKAdNetwork 4 there is one window and a value that can only rise: the answer is
///   never below the app's current value.
public enum NextConversionValue {
    /// Where each window ends, in hours after first launch.
    public static let windowEnds: [Int64] = [48, 168, 840]

    public struct Answer: Sendable, Equatable {
        public enum Status: String, Sendable {
            case ok
            /// 35 days after first launch: no window is open any more.
            case windowClosed = "window_closed"
        }

        public var status: Status
        /// 1–3; nil before SKAdNetwork 4 (one window whose timer restarts with each rise) and
        /// once every window has closed.
        public var window: Int?
        public var conversionValue: Int?
        public var coarseConversionValue: String?
        public var lockWindow: Bool

        public init(status: Status, window: Int?, conversionValue: Int?, coarseConversionValue: String?, lockWindow: Bool) {
            self.status = status
            self.window = window
            self.conversionValue = conversionValue
            self.coarseConversionValue = coarseConversionValue
            self.lockWindow = lockWindow
        }

        /// `{"conversion_value":…,"coarse_conversion_value":…,"lock_window":…,"status":"ok","window":…}`
        public var json: String {
            var out = "{\"conversion_value\":" + (conversionValue.map(String.init) ?? "null")
            out += ",\"coarse_conversion_value\":" + (coarseConversionValue.map { "\"\($0)\"" } ?? "null")
            out += ",\"lock_window\":\(lockWindow),\"status\":\"\(status.rawValue)\",\"window\":" + (window.map(String.init) ?? "null")
            if status == .windowClosed { out += ",\"reason\":\"the last conversion window closed 35 days after first launch\"" }
            return out + "}"
        }
    }

    static let coarseLevels = ["low", "medium", "high"]

    public static func answer(for counters: AppCounters, schema: ConversionValueSchema, now: Timestamp) throws(RequestProblem) -> Answer {
        let elapsed = now.millisecondsSinceEpoch - counters.firstLaunch.millisecondsSinceEpoch
        // A device clock a little ahead is normal; a first launch hours ahead is a bad counter.
        guard elapsed >= -3_600_000 else {
            throw .invalid("first_launch", "time_in_the_future", "is after now (\(now.rfc3339)); send when the app first launched")
        }
        let reached = fineValue(schema: schema, counters: counters)
        if let version = counters.skAdNetworkVersion, !version.hasWindows {
            let value = max(reached ?? 0, counters.conversionValue ?? 0)
            return Answer(status: .ok, window: nil, conversionValue: value, coarseConversionValue: nil, lockWindow: false)
        }
        let hours = max(0, elapsed) / 3_600_000
        guard let index = windowEnds.firstIndex(where: { hours < $0 }) else {
            return Answer(status: .windowClosed, window: nil, conversionValue: nil, coarseConversionValue: nil, lockWindow: false)
        }
        let fine = reached ?? counters.conversionValue ?? 0
        let coarse = schema.coarseFromFine.map { t in fine >= t.high ? "high" : fine >= t.medium ? "medium" : "low" }
            ?? counters.coarseConversionValue
        let lock: Bool
        if index == 0 {
            lock = schema.lockAt?.fine.map { fine >= $0 } ?? false
        } else {
            lock = both(schema.lockAt?.coarse, coarse).map { level(of: $1) >= level(of: $0) } ?? false
        }
        return Answer(status: .ok, window: index + 1, conversionValue: index == 0 ? fine : nil, coarseConversionValue: coarse, lockWindow: lock)
    }

    /// The highest fine value the counters reach in the schema; nil when no range is reached.
    public static func fineValue(schema: ConversionValueSchema, counters: AppCounters) -> Int? {
        var best: Int?
        for range in schema.fine {
            guard let value = value(in: range, counters: counters) else { continue }
            best = max(best ?? value, value)
        }
        return best
    }

    static func value(in range: ConversionValueSchema.FineRange, counters: AppCounters) -> Int? {
        guard (0...63).contains(range.from), (range.from...63).contains(range.to) else { return nil }
        let span = range.to - range.from
        var step = 0
        if let events = range.events, let fewest = events.lazy.map({ counters.events[$0] ?? 0 }).min() {
            guard fewest >= 1 else { return nil }
            step = fewest - 1
        }
        if let revenue = range.revenue {
            let amount = counters.revenue[revenue.currency] ?? 0
            guard amount > 0, amount >= revenue.min else { return nil }
            let share = revenue.max > revenue.min ? (amount - revenue.min) / (revenue.max - revenue.min) : 1
            step = max(step, steps(share: share, span: span))
        }
        return range.from + min(step, span)
    }

    /// How many values above a range's `from` a revenue share reaches, 0…span. Checked rather
    /// than converted: a share can be any size a schema and an app's counters make it (1e20 of
    /// revenue in a 0–100 range, or a range 1e-300 wide), and `Int(_: Double)` traps past Int.
    static func steps(share: Double, span: Int) -> Int {
        let scaled = share * Double(span + 1)
        guard scaled > 0 else { return 0 }  // NaN too
        guard scaled < Double(span) else { return span }  // +infinity too
        return Int(scaled.rounded(.down))
    }

    private static func level(of coarse: String) -> Int { coarseLevels.firstIndex(of: coarse) ?? 0 }
}

private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
