import AppleAds

/// An ad network as its postbacks name it (`ad-network-id`, `ad-network-identifier`), with a
/// display name and the campaigns it runs for the app developer: SKAdNetwork 4 and
/// AdAttributionKit source identifiers, or the campaign ids of SKAdNetwork before 4.0.
public struct AdNetwork: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var campaigns: [Campaign]

    public struct Campaign: Sendable, Equatable, Codable {
        /// 2 to 4 digits.
        public var sourceIdentifier: String?
        /// 1–100, before SKAdNetwork 4.0.
        public var campaignID: Int?
        public var name: String

        public init(sourceIdentifier: String? = nil, campaignID: Int? = nil, name: String) {
            self.sourceIdentifier = sourceIdentifier
            self.campaignID = campaignID
            self.name = name
        }

        enum CodingKeys: String, CodingKey {
            case sourceIdentifier = "source_identifier", campaignID = "campaign_id", name
        }
    }

    public init(id: String, name: String, campaigns: [Campaign] = []) {
        self.id = id
        self.name = name
        self.campaigns = campaigns
    }

    /// The campaign a postback's source identifier or campaign id names. A 4-digit source
    /// identifier reaches the developer cut to its first 2 or 3 digits at lower privacy tiers:
    /// a shorter one that is not registered itself names every registered campaign it begins
    /// ("Holiday video or Puzzle fans"), since it may be any of them.
    public func campaign(named value: String) -> String? {
        if let exact = campaigns.first(where: { $0.sourceIdentifier == value || $0.campaignID.map(String.init) == value }) {
            return exact.name
        }
        let longer = campaigns.filter { ($0.sourceIdentifier?.hasPrefix(value) ?? false) }
        return longer.isEmpty ? nil : longer.map(\.name).joined(separator: " or ")
    }

    /// Apple Ads, which has sent SKAdNetwork postbacks (1.0 to 3.0, taps only) as `com.apple.ads`
    /// since 10 April 2025, with the placement as the campaign id (docs/APPLE.md). Known without
    /// registering; a registration of the same id takes its place.
    public static let appleAds = AdNetwork(
        id: "com.apple.ads", name: "Apple Ads",
        campaigns: AppleAdsPlacement.allCases.compactMap { placement in
            placement.postbackCampaign.flatMap(Int.init).map { Campaign(campaignID: $0, name: placement.label) }
        })

    /// The ad networks every endpoint knows.
    public static let known = [appleAds]
}
