import AttributionCore
import ReportStore

/// The summary's counts, kept up to date as reports are stored (and rebuilt from the log at
/// start), so that the summary API never scans reports. Counts are per UTC day, so a period is a
/// range of days; every count is of stored reports, exactly as the export lists them.
struct SummaryAggregates: Sendable {
    /// One group of reports: everything the summary can filter or break down by.
    struct Group: Hashable, Sendable {
        var site: String
        var role: ReportRole
        var accepted: Bool
        var sourceSite: String
        var sourceID: UInt8
        var campaign: String?
        var destination: String
        var triggerData: UInt8
        var late: Bool
        var hasTokens: Bool
    }

    struct ReasonKey: Hashable, Sendable {
        var site: String
        var role: ReportRole
        var reason: String
    }

    struct DelayKey: Hashable, Sendable {
        var site: String
        var role: ReportRole
        var bucket: Int
    }

    struct Day: Sendable {
        var groups: [Group: Int] = [:]
        var quarantineReasons: [ReasonKey: Int] = [:]
        var delays: [DelayKey: Int] = [:]
    }

    /// Delay buckets in hours (receipt minus trigger): the model's 24–48 h cut in six-hour steps.
    static let delayBuckets: [(from: Int, to: Int?)] = [(0, 24), (24, 30), (30, 36), (36, 42), (42, 48), (48, 72), (72, 168), (168, nil)]

    private(set) var days: [Int32: Day] = [:]
    private(set) var sites: Set<String> = []

    static func day(of time: Timestamp) -> Int32 {
        let ms = time.millisecondsSinceEpoch
        return Int32((ms >= 0 ? ms : ms - TimingModel.day + 1) / TimingModel.day)
    }

    mutating func add(_ report: StoredReport, _ facts: ReportFacts) {
        let site = report.role == .source ? facts.sourceSite : facts.attributedOnSite
        let accepted = report.verdict == .accepted
        let group = Group(site: site, role: report.role, accepted: accepted, sourceSite: facts.sourceSite, sourceID: facts.sourceID,
                          campaign: report.campaign, destination: facts.attributedOnSite, triggerData: facts.triggerData,
                          late: report.reasons.contains("late"), hasTokens: facts.hasTokens)
        let d = Self.day(of: report.receivedAt)
        // Mutated in place: taking the day out and putting it back would copy its dictionaries
        // on every report.
        days[d, default: Day()].groups[group, default: 0] += 1
        if !accepted {
            for reason in report.reasons {
                days[d, default: Day()].quarantineReasons[ReasonKey(site: site, role: report.role, reason: reason), default: 0] += 1
            }
        }
        if let trigger = report.triggerRecordedAt {
            let hours = Int((report.receivedAt.millisecondsSinceEpoch - trigger.millisecondsSinceEpoch) / TimingModel.hour)
            let bucket = Self.delayBuckets.firstIndex { hours >= $0.from && ($0.to.map { hours < $0 } ?? true) } ?? 0
            days[d, default: Day()].delays[DelayKey(site: site, role: report.role, bucket: bucket), default: 0] += 1
        }
        if !sites.contains(site) { sites.insert(site) }
    }

    /// Adds every count of `other`.
    mutating func merge(_ other: SummaryAggregates) {
        for (d, day) in other.days {
            for (key, n) in day.groups { days[d, default: Day()].groups[key, default: 0] += n }
            for (key, n) in day.quarantineReasons { days[d, default: Day()].quarantineReasons[key, default: 0] += n }
            for (key, n) in day.delays { days[d, default: Day()].delays[key, default: 0] += n }
        }
        sites.formUnion(other.sites)
    }

    /// The days in `range`, each with its counts (days without reports are absent).
    func days(in range: ClosedRange<Int32>) -> [(Int32, Day)] {
        if range.count <= days.count {
            return range.compactMap { d in days[d].map { (d, $0) } }
        }
        return days.filter { range.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
