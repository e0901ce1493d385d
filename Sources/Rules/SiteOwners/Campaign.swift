import Primitives

/// A publisher's campaign: what one of its 256 source ids meant during a period.
///
/// Source ids are reused over time, so the registry keeps, per source site and id, campaigns
/// whose periods (each stretched by how late its reports can arrive) never overlap.
public struct Campaign: Sendable, Equatable, Codable {
    /// The click source site (registrable domain), or for app-to-web clicks the site of the app's
    /// `NSAdvertisingAttributionReportEndpoint`.
    public var sourceSite: String
    /// 0–255, the link's `attributionsourceid`.
    public var sourceID: UInt8
    /// The registrable domain the ad links to (`attributiondestination`).
    public var destination: String
    public var name: String
    /// When clicks on the campaign's ads begin.
    public var startsAt: Timestamp
    /// When they end; nil while the campaign runs with no end date.
    public var endsAt: Timestamp?

    public init(sourceSite: String, sourceID: UInt8, destination: String, name: String, startsAt: Timestamp, endsAt: Timestamp?) {
        self.sourceSite = sourceSite
        self.sourceID = sourceID
        self.destination = destination
        self.name = name
        self.startsAt = startsAt
        self.endsAt = endsAt
    }

    /// The last moment a report of this campaign can be in the model: a click at the end, a
    /// trigger 7 days later, a report 48 hours after that. Nil while open-ended.
    public var busyUntil: Timestamp? {
        endsAt.map { $0.adding(milliseconds: TimingModel.clickLifetime + TimingModel.maximumDelay) }
    }

    /// Whether the campaign's id is taken at any moment of `other`'s busy period, or the reverse.
    public func overlaps(_ other: Campaign) -> Bool {
        let aEnd = busyUntil?.millisecondsSinceEpoch ?? .max
        let bEnd = other.busyUntil?.millisecondsSinceEpoch ?? .max
        return startsAt.millisecondsSinceEpoch <= bEnd && other.startsAt.millisecondsSinceEpoch <= aEnd
    }

    /// Whether clicks could have happened during `window` (inclusive at both ends).
    func isActive(during window: ClosedRange<Int64>) -> Bool {
        let end = endsAt?.millisecondsSinceEpoch ?? .max
        return startsAt.millisecondsSinceEpoch <= window.upperBound && window.lowerBound <= end
    }

    enum CodingKeys: String, CodingKey {
        case sourceSite = "source_site"
        case sourceID = "source_id"
        case destination, name
        case startsAt = "starts_at"
        case endsAt = "ends_at"
    }
}
