import PCM
import Primitives
import SiteOwners
import PCMRecords

/// The summary's counts, kept up to date as reports are stored (and rebuilt from the log at
/// start), so that the summary API never scans reports. Counts are per UTC day, so a period is a
/// range of days; every count is of stored reports, exactly as the export lists them.
///
/// Names (sites, campaigns) are interned as small integers, and each day keeps the roll-ups the
/// page shows (totals, by campaign, by conversion) besides the finest groups (for the CSV): a
/// 30-day summary then adds up a few thousand integer-keyed counts, not every group.
struct SummaryAggregates: Sendable {
    typealias Name = UInt32

    /// One group of reports: everything the summary can filter or break down by.
    struct Group: Hashable, Sendable {
        var site: Name
        var role: ReportRole
        var accepted: Bool
        var sourceSite: Name
        var sourceID: UInt8
        var campaign: Name?
        var destination: Name
        var triggerData: UInt8
        var late: Bool

        // Keys are hashed for every report stored. Packing the fields into three words hashes
        // them in three steps instead of nine; equal groups still pack alike.
        func hash(into hasher: inout Hasher) {
            hasher.combine(UInt64(site) << 32 | UInt64(sourceSite))
            hasher.combine(UInt64(destination) << 32 | UInt64(campaign ?? .max))
            hasher.combine(UInt64(sourceID) | UInt64(triggerData) << 8 | (role == .source ? 0 : 1 << 16)
                           | (accepted ? 1 << 17 : 0) | (late ? 1 << 18 : 0) | (campaign == nil ? 1 << 19 : 0))
        }
    }

    struct SiteRole: Hashable, Sendable {
        var site: Name
        var role: ReportRole

        /// One word, for the same reason as `Group`'s.
        var packed: UInt64 { UInt64(site) << 1 | (role == .source ? 0 : 1) }

        func hash(into hasher: inout Hasher) { hasher.combine(packed) }
    }

    struct Totals: Sendable, Equatable {
        var accepted = 0
        var quarantined = 0
        var late = 0
        var withTokens = 0
        /// Reports with a token that verified (`source_token_verified`, `destination_token_verified`).
        var verified = 0

        mutating func count(accepted: Bool, late: Bool, hasTokens: Bool, verifiedToken: Bool, times n: Int = 1) {
            if accepted {
                self.accepted += n
                if late { self.late += n }
            } else {
                quarantined += n
            }
            if hasTokens { withTokens += n }
            if verifiedToken { verified += n }
        }
    }

    struct CampaignKey: Hashable, Sendable {
        var owner: SiteRole
        var sourceSite: Name
        var sourceID: UInt8
        var campaign: Name?

        func hash(into hasher: inout Hasher) {
            hasher.combine(owner.packed << 32 | UInt64(sourceSite))
            hasher.combine(UInt64(campaign ?? .max) << 8 | UInt64(sourceID) | (campaign == nil ? 1 << 63 : 0))
        }
    }

    struct ConversionKey: Hashable, Sendable {
        var owner: SiteRole
        var destination: Name
        var triggerData: UInt8

        func hash(into hasher: inout Hasher) {
            hasher.combine(owner.packed << 32 | UInt64(destination))
            hasher.combine(triggerData)
        }
    }

    struct ReasonKey: Hashable, Sendable {
        var owner: SiteRole
        var reason: Name
    }

    struct DelayKey: Hashable, Sendable {
        var owner: SiteRole
        var bucket: Int
    }

    struct Day: Sendable {
        mutating func record(_ group: Group, owner: SiteRole, hasTokens: Bool, verifiedToken: Bool, reasons: [Name], delayBucket: Int?,
                             count n: Int = 1) {
            let before = groups.count
            groups[group, default: 0] += n
            if groups.count != before { groupCounts[owner, default: 0] += 1 }
            // Updated in place: one lookup, where reading and writing back took two.
            totals[owner, default: Totals()].count(accepted: group.accepted, late: group.late, hasTokens: hasTokens,
                                                   verifiedToken: verifiedToken, times: n)
            if group.accepted {
                let campaign = CampaignKey(owner: owner, sourceSite: group.sourceSite, sourceID: group.sourceID, campaign: group.campaign)
                let conversion = ConversionKey(owner: owner, destination: group.destination, triggerData: group.triggerData)
                campaigns[campaign, default: 0] += n
                conversions[conversion, default: 0] += n
                if verifiedToken {
                    verifiedCampaigns[campaign, default: 0] += n
                    verifiedConversions[conversion, default: 0] += n
                }
            } else {
                for reason in reasons { quarantineReasons[ReasonKey(owner: owner, reason: reason), default: 0] += n }
            }
            if let delayBucket { delays[DelayKey(owner: owner, bucket: delayBucket), default: 0] += n }
        }

        var groups: [Group: Int] = [:]
        var totals: [SiteRole: Totals] = [:]
        /// Accepted reports only, like the page's tables.
        var campaigns: [CampaignKey: Int] = [:]
        var conversions: [ConversionKey: Int] = [:]
        /// Of those, the reports with a verified token.
        var verifiedCampaigns: [CampaignKey: Int] = [:]
        var verifiedConversions: [ConversionKey: Int] = [:]
        var quarantineReasons: [ReasonKey: Int] = [:]
        var delays: [DelayKey: Int] = [:]
        /// Each served site's partners this day (`partner(_:day:owner:)`); learnt from the groups
        /// the first time a day is added to after a checkpoint was read.
        var partners: [SiteRole: Set<Name>] = [:]
        /// Each served site's groups this day (`bounded(_:day:owner:)`), learnt likewise.
        var groupCounts: [SiteRole: Int] = [:]
        var partnersKnown = false

        mutating func learnPartners() {
            for group in groups.keys {
                let owner = SiteRole(site: group.site, role: group.role)
                partners[owner, default: []].insert(group.role == .source ? group.destination : group.sourceSite)
                groupCounts[owner, default: 0] += 1
            }
            partnersKnown = true
        }

        /// Adds `n` to a group merged in, keeping its owner's count of groups.
        mutating func addGroup(_ group: Group, owner: SiteRole, _ n: Int) {
            let before = groups.count
            groups[group, default: 0] += n
            if groups.count != before { groupCounts[owner, default: 0] += 1 }
        }
    }

    /// A report names two sites: the served site it was sent to, and its partner (the source site
    /// of a destination copy, the destination of a source copy). Anyone can send a report naming
    /// any registrable site, and each partner would be rows of its own, kept for the whole
    /// retention. So a served site keeps at most this many partners apart in a day, per role;
    /// the rest of that day are counted together under `foldedPartner`, a row that says so.
    static let maxPartnersPerDay = 256
    static let foldedPartner = "(other sites: more than 256 that day)"
    /// The partners kept apart still multiply with source ids, trigger data and verdicts, each
    /// free to a stranger: past this many groups for a served site in a day (per role), a new
    /// group is counted under the folded partner too, which holds at most 256 × 16 × 8 more.
    static let maxGroupsPerDay = 65_536
    /// `maxGroupsPerDay`, smaller in tests.
    var groupsPerDayBound = Self.maxGroupsPerDay

    /// Delay buckets in hours (receipt minus trigger): the model's 24–48 h cut in six-hour steps.
    static let delayBuckets: [(from: Int, to: Int?)] = [(0, 24), (24, 30), (30, 36), (36, 42), (42, 48), (48, 72), (72, 168), (168, nil)]

    private(set) var days: [Int32: Day] = [:]
    private(set) var names: [String] = []
    private var ids: [String: Name] = [:]
    /// The names interned last, looked at before `ids`.
    private var recentNames = RecentAnswers<Name>()
    /// Sites with reports, as names.
    private(set) var sites: Set<Name> = []

    init() {}

    var isEmpty: Bool { days.isEmpty }

    /// Aggregates as a checkpoint saved them.
    init(names: [String], days: [Int32: Day], sites: Set<Name>) {
        self.names = names
        self.days = days
        self.sites = sites
        for (id, name) in names.enumerated() { ids[name] = Name(id) }
    }

    static func day(of time: Timestamp) -> Int32 { time.day }

    func name(_ id: Name) -> String { names[Int(id)] }
    func id(of name: String) -> Name? { ids[name] }

    mutating func intern(_ name: String) -> Name {
        if let recent = recentNames.answer(for: name) { return recent }
        let id: Name
        if let known = ids[name] {
            id = known
        } else {
            id = Name(names.count)
            names.append(name)
            ids[name] = id
        }
        recentNames.remember(name, id)
        return id
    }

    mutating func add(_ report: StoredReport, _ facts: ReportFacts) {
        let accepted = report.verdict == .accepted
        add(day: Self.day(of: report.receivedAt), role: report.role, accepted: accepted, late: report.reasons.contains("late"),
            verifiedToken: Self.hasVerifiedToken(report.reasons), quarantineReasons: accepted ? [] : report.reasons,
            campaign: report.campaign, delayBucket: report.triggerRecordedAt.map { Self.delayBucket(from: $0, to: report.receivedAt) },
            facts: facts)
    }

    /// Whether a report's reasons say one of its tokens verified.
    static func hasVerifiedToken(_ reasons: [String]) -> Bool {
        reasons.contains { $0 == "source_token_verified" || $0 == "destination_token_verified" }
    }

    /// The bucket of the delay from a trigger to its report; a delay past what 64 bits hold (a
    /// damaged or forged log) in the first or last.
    static func delayBucket(from trigger: Timestamp, to report: Timestamp) -> Int {
        let (delay, overflow) = report.millisecondsSinceEpoch.subtractingReportingOverflow(trigger.millisecondsSinceEpoch)
        guard !overflow else { return delayBucket(hours: report.millisecondsSinceEpoch < trigger.millisecondsSinceEpoch ? -1 : Int.max) }
        return delayBucket(hours: Int(delay / TimingModel.hour))
    }

    /// The index in `delayBuckets` of a delay in hours (a negative one, from a clock set back, in the first).
    static func delayBucket(hours: Int) -> Int {
        delayBuckets.firstIndex { hours >= $0.from && ($0.to.map { hours < $0 } ?? true) } ?? 0
    }

    /// Adds `count` reports alike in everything the summary keeps: one stored report, or a group
    /// of them as the cluster's summary reads them from ClickHouse.
    mutating func add(day: Int32, role: ReportRole, accepted: Bool, late: Bool, verifiedToken: Bool, quarantineReasons: [String],
                      campaign campaignName: String?, delayBucket: Int?, facts: ReportFacts, count: Int = 1) {
        let owner = SiteRole(site: intern(role == .source ? facts.sourceSite : facts.attributedOnSite), role: role)
        let partner = partner(role == .source ? facts.attributedOnSite : facts.sourceSite, day: day, owner: owner)
        let (sourceSite, destination) = role == .source ? (owner.site, partner) : (partner, owner.site)
        let campaign = campaignName.map { intern($0) }
        let reasonNames = quarantineReasons.map { intern($0) }
        let group = bounded(Group(site: owner.site, role: owner.role, accepted: accepted, sourceSite: sourceSite, sourceID: facts.sourceID,
                                  campaign: campaign, destination: destination, triggerData: facts.triggerData, late: late), day: day, owner: owner)
        // One lookup of the day, updated in place: taking it out and putting it back would copy
        // its dictionaries on every report.
        days[day, default: Day()].record(group, owner: owner, hasTokens: facts.hasTokens, verifiedToken: verifiedToken,
                                         reasons: reasonNames, delayBucket: delayBucket, count: count)
        if !sites.contains(owner.site) { sites.insert(owner.site) }
    }

    /// The name a report's partner site is counted under: its own while `owner` has fewer than
    /// `maxPartnersPerDay` others that day (or already has it), else `foldedPartner`. A name past
    /// the bound is never interned, so a flood of made-up sites grows nothing.
    mutating func partner(_ name: String, day: Int32, owner: SiteRole) -> Name {
        if days[day]?.partnersKnown != true { days[day, default: Day()].learnPartners() }
        if let id = id(of: name), days[day]?.partners[owner]?.contains(id) == true { return id }
        guard days[day]?.partners[owner]?.count ?? 0 < Self.maxPartnersPerDay, name != Self.foldedPartner else {
            return intern(Self.foldedPartner)
        }
        let id = intern(name)
        days[day, default: Day()].partners[owner, default: []].insert(id)
        return id
    }

    /// `group`, unless it would be a new group past `maxGroupsPerDay` for its owner that day: then
    /// the same with its partner folded.
    mutating func bounded(_ group: Group, day: Int32, owner: SiteRole) -> Group {
        guard let count = days[day]?.groupCounts[owner], count >= groupsPerDayBound, days[day]?.groups[group] == nil else { return group }
        var folded = group
        let name = intern(Self.foldedPartner)
        if owner.role == .source { folded.destination = name } else { folded.sourceSite = name }
        return folded
    }

    /// Adds every count of `other`, whose names are its own; its partners are admitted as
    /// `partner` admits them, so that counts staged or read elsewhere keep the bound.
    mutating func merge(_ other: SummaryAggregates) {
        // Interned as they are used: a partner's name only if it is admitted.
        var map = [Name?](repeating: nil, count: other.names.count)
        func m(_ id: Name) -> Name {
            if let known = map[Int(id)] { return known }
            let ours = intern(other.names[Int(id)])
            map[Int(id)] = ours
            return ours
        }
        func m(_ o: SiteRole) -> SiteRole { SiteRole(site: m(o.site), role: o.role) }
        for (d, day) in other.days {
            if days[d]?.partnersKnown != true { days[d, default: Day()].learnPartners() }
            // Each partner's name as this side counts it, once per owner.
            var admitted: [SiteRole: [Name: Name]] = [:]
            func admit(_ owner: SiteRole, _ theirs: Name) -> Name {
                if let known = admitted[owner]?[theirs] { return known }
                let ours = partner(other.name(theirs), day: d, owner: owner)
                admitted[owner, default: [:]][theirs] = ours
                return ours
            }
            for (g, n) in day.groups {
                let owner = SiteRole(site: m(g.site), role: g.role)
                let source = g.role == .destination ? admit(owner, g.sourceSite) : m(g.sourceSite)
                let destination = g.role == .source ? admit(owner, g.destination) : m(g.destination)
                let key = bounded(Group(site: owner.site, role: g.role, accepted: g.accepted, sourceSite: source, sourceID: g.sourceID,
                                        campaign: g.campaign.map(m), destination: destination, triggerData: g.triggerData, late: g.late),
                                  day: d, owner: owner)
                days[d, default: Day()].addGroup(key, owner: owner, n)
            }
            for (k, t) in day.totals {
                var totals = days[d, default: Day()].totals[m(k), default: Totals()]
                totals.accepted += t.accepted
                totals.quarantined += t.quarantined
                totals.late += t.late
                totals.withTokens += t.withTokens
                totals.verified += t.verified
                days[d, default: Day()].totals[m(k)] = totals
            }
            func campaignKey(_ k: CampaignKey) -> CampaignKey {
                let owner = m(k.owner)
                return CampaignKey(owner: owner, sourceSite: owner.role == .destination ? admit(owner, k.sourceSite) : m(k.sourceSite),
                                   sourceID: k.sourceID, campaign: k.campaign.map(m))
            }
            func conversionKey(_ k: ConversionKey) -> ConversionKey {
                let owner = m(k.owner)
                return ConversionKey(owner: owner, destination: owner.role == .source ? admit(owner, k.destination) : m(k.destination),
                                     triggerData: k.triggerData)
            }
            for (k, n) in day.campaigns { days[d, default: Day()].campaigns[campaignKey(k), default: 0] += n }
            for (k, n) in day.conversions { days[d, default: Day()].conversions[conversionKey(k), default: 0] += n }
            for (k, n) in day.verifiedCampaigns { days[d, default: Day()].verifiedCampaigns[campaignKey(k), default: 0] += n }
            for (k, n) in day.verifiedConversions { days[d, default: Day()].verifiedConversions[conversionKey(k), default: 0] += n }
            for (k, n) in day.quarantineReasons { days[d, default: Day()].quarantineReasons[ReasonKey(owner: m(k.owner), reason: m(k.reason)), default: 0] += n }
            for (k, n) in day.delays { days[d, default: Day()].delays[DelayKey(owner: m(k.owner), bucket: k.bucket), default: 0] += n }
        }
        for site in other.sites { sites.insert(m(site)) }
    }

    /// The days in `range` that have reports, oldest first.
    func days(in range: ClosedRange<Int32>) -> [(Int32, Day)] {
        if range.count <= days.count {
            return range.compactMap { d in days[d].map { (d, $0) } }
        }
        return days.filter { range.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
