import Primitives

/// What a marketer spent on one campaign of one app on one day, in one currency: the CSV row
/// `2026-11-20,6443210987,example123.skadnetwork,4210,125.50,USD`. The campaign is as the
/// postbacks name it (`source-identifier` or `campaign-id`) under their ad network's id, so that
/// it meets the installs and the revenue estimate of the same campaign.
public struct SpendRow: Sendable, Equatable, Codable {
    /// The UTC day, as days since 1970-01-01.
    public var day: Int32
    public var appID: Int
    /// The app's site when the row was given: whose spend it is (`NameDisclosure`, one advertiser per site).
    public var site: String
    public var adNetwork: String
    public var campaign: String
    public var amount: Double
    /// ISO 4217.
    public var currency: String

    public init(day: Int32, appID: Int, site: String, adNetwork: String, campaign: String, amount: Double, currency: String) {
        self.day = day
        self.appID = appID
        self.site = site
        self.adNetwork = adNetwork
        self.campaign = campaign
        self.amount = amount
        self.currency = currency
    }

    enum CodingKeys: String, CodingKey {
        case day, appID = "app_id", site, adNetwork = "ad_network", campaign, amount, currency
    }

    /// What a later row of the same day, app, ad network and campaign replaces.
    public struct Key: Hashable, Sendable {
        public var day: Int32
        public var appID: Int
        public var adNetwork: String
        public var campaign: String
    }

    public var key: Key { Key(day: day, appID: appID, adNetwork: adNetwork, campaign: campaign) }
}
