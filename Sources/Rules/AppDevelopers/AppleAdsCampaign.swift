
/// An Apple Ads campaign's names, registered so that the Apple Ads view shows them beside the
/// ids Apple's records carry: the campaign, its ad groups and its keywords.
public struct AppleAdsCampaign: Sendable, Equatable, Codable {
    public var campaignID: Int64
    public var name: String
    public var adGroups: [Named]
    public var keywords: [Named]

    public struct Named: Sendable, Equatable, Codable {
        public var id: Int64
        public var name: String

        public init(id: Int64, name: String) {
            self.id = id
            self.name = name
        }
    }

    public init(campaignID: Int64, name: String, adGroups: [Named] = [], keywords: [Named] = []) {
        self.campaignID = campaignID
        self.name = name
        self.adGroups = adGroups
        self.keywords = keywords
    }

    enum CodingKeys: String, CodingKey {
        case campaignID = "campaign_id", name, adGroups = "ad_groups", keywords
    }

    public func adGroupName(_ id: Int64?) -> String? { id.flatMap { id in adGroups.first { $0.id == id }?.name } }
    public func keywordName(_ id: Int64?) -> String? { id.flatMap { id in keywords.first { $0.id == id }?.name } }
}
