import Primitives

/// The site owners' registrations: advertisers' conversions and publishers' campaigns.
///
/// A value type with every rule of a registration and no I/O; the endpoint keeps one behind a
/// lock and persists it after each change.
public struct Registry: Sendable, Equatable, Codable {
    public private(set) var conversions: [Conversion] = []
    public private(set) var campaigns: [Campaign] = []

    public init() {}

    // MARK: - Conversions

    /// Adds `conversion`, or says why not (nothing changes then).
    public mutating func add(_ conversion: Conversion, siteRules: SiteRules) throws(RequestProblem) {
        if let violation = siteRules.check(conversion.site) {
            throw .invalid("site", "not_registrable_domain", violation.detail)
        }
        try RegisteredName.check(conversion.name, field: "name")
        guard conversion.triggerData <= 15 else {
            throw .invalid("trigger_data", "out_of_range", "must be 0–15 (4 bits); got \(conversion.triggerData)")
        }
        guard conversion.priority <= 63 else {
            throw .invalid("priority", "out_of_range", "must be 0–63 (6 bits); got \(conversion.priority)")
        }
        guard !conversions.contains(where: { $0.site == conversion.site && $0.name == conversion.name }) else {
            throw RequestProblem(.conflict, rule: "duplicate_name", field: "name",
                                  detail: "\(conversion.site) already has a conversion named \"\(conversion.name)\"")
        }
        conversions.append(conversion)
    }

    public func conversion(site: String, name: String) -> Conversion? {
        conversions.first { $0.site == site && $0.name == name }
    }

    /// Conversions of `site` with `triggerData`, highest priority first.
    public func conversions(site: String, triggerData: UInt8) -> [Conversion] {
        conversions.filter { $0.site == site && $0.triggerData == triggerData }.sorted { $0.priority > $1.priority }
    }

    @discardableResult
    public mutating func removeConversion(site: String, name: String) -> Bool {
        conversions.removeEvery { $0.site == site && $0.name == name }
    }

    // MARK: - Campaigns

    /// Adds `campaign`, or says why not (nothing changes then). Two campaigns of one source site
    /// may share an id only if their busy periods (start to end + 7 days + 48 hours) are apart.
    public mutating func add(_ campaign: Campaign, siteRules: SiteRules) throws(RequestProblem) {
        if let violation = siteRules.check(campaign.sourceSite) {
            throw .invalid("source_site", "not_registrable_domain", violation.detail)
        }
        if let violation = siteRules.check(campaign.destination) {
            throw .invalid("destination", "not_registrable_domain", violation.detail)
        }
        guard campaign.destination != campaign.sourceSite else {
            throw .invalid("destination", "same_site", "must differ from source_site: PCM measures clicks from one site to another")
        }
        try RegisteredName.check(campaign.name, field: "name")
        if let end = campaign.endsAt, end < campaign.startsAt {
            throw .invalid("ends_at", "ends_before_start", "(\(end.rfc3339)) is before starts_at (\(campaign.startsAt.rfc3339))")
        }
        guard !campaigns.contains(where: { $0.sourceSite == campaign.sourceSite && $0.name == campaign.name }) else {
            throw RequestProblem(.conflict, rule: "duplicate_name", field: "name",
                                  detail: "\(campaign.sourceSite) already has a campaign named \"\(campaign.name)\"")
        }
        let sameID = campaigns.filter { $0.sourceSite == campaign.sourceSite && $0.sourceID == campaign.sourceID }
        if let clash = sameID.first(where: { $0.overlaps(campaign) }) {
            throw RequestProblem(.conflict, rule: "source_id_in_use", field: "source_id",
                                  detail: Self.clashDetail(campaign, clash, sameID))
        }
        campaigns.append(campaign)
    }

    /// The reason and the earliest start at which the id is free again (if it ever is).
    private static func clashDetail(_ campaign: Campaign, _ clash: Campaign, _ sameID: [Campaign]) -> String {
        var detail = "source id \(campaign.sourceID) of \(campaign.sourceSite) belongs to \"\(clash.name)\""
        guard let busyUntil = clash.busyUntil else {
            return detail + ", which has no end date; give it an end date or use another id"
        }
        detail += " until \(busyUntil.rfc3339) (its end, \(clash.endsAt!.rfc3339), plus 7 days for clicks to convert and 48 hours for reports)"
        // The first moment after every busy period that overlaps from here on.
        var free = busyUntil.adding(milliseconds: 1)
        for other in sameID.sorted(by: { $0.startsAt < $1.startsAt }) where other.startsAt <= free {
            guard let end = other.busyUntil else { return detail + "; \"\(other.name)\" holds it after that with no end date" }
            if end >= free { free = end.adding(milliseconds: 1) }
        }
        return detail + "; the id is free again from \(free.rfc3339)"
    }

    /// Changes the campaign `name` of `sourceSite` into `campaign`: its name, or its end (to end
    /// it now, or to move its end). Its source site, id, destination and start say which reports
    /// are its, so they stay; a new campaign is registered instead. Checked as a new one is.
    public mutating func replaceCampaign(sourceSite: String, name: String, with campaign: Campaign, siteRules: SiteRules) throws(RequestProblem) {
        guard let i = campaigns.firstIndex(where: { $0.sourceSite == sourceSite && $0.name == name }) else {
            throw RequestProblem(.notFound, rule: "unknown_campaign", field: "name", detail: "\(sourceSite) has no campaign named \"\(name)\"")
        }
        let old = campaigns[i]
        for (field, same) in [("source_site", old.sourceSite == campaign.sourceSite), ("source_id", old.sourceID == campaign.sourceID),
                              ("destination", old.destination == campaign.destination), ("starts_at", old.startsAt == campaign.startsAt)] where !same {
            throw .invalid(field, "immutable_field", "cannot change: a campaign's source site, source id, destination and start say which reports are its; end this one and register a new campaign instead")
        }
        var copy = self
        copy.campaigns.remove(at: i)
        try copy.add(campaign, siteRules: siteRules)
        // In its old place, so that the list keeps its order.
        copy.campaigns.removeLast()
        copy.campaigns.insert(campaign, at: i)
        self = copy
    }

    /// Each of a source site's 256 ids at `now`: free, or whose it is and until when (its busy
    /// period: the end, plus 7 days for clicks to convert and 48 hours for reports; nil while it
    /// has no end), and the next campaign that starts on it later.
    public func sourceIDs(of sourceSite: String, at now: Timestamp) -> [SourceIDState] {
        (0...255).map { id in
            let same = campaigns.filter { $0.sourceSite == sourceSite && $0.sourceID == UInt8(id) }
            let holder = same.first { $0.startsAt <= now && ($0.busyUntil.map { now <= $0 } ?? true) }
            let next = same.filter { $0.startsAt > now }.min { $0.startsAt < $1.startsAt }
            return SourceIDState(sourceID: UInt8(id), holder: holder, next: next)
        }
    }

    @discardableResult
    public mutating func removeCampaign(sourceSite: String, name: String) -> Bool {
        campaigns.removeEvery { $0.sourceSite == sourceSite && $0.name == name }
    }
}
