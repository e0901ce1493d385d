import Primitives

/// What Apple's attribution API answers for a token with 200, keeping only the documented fields
/// (seed 002): nothing else about the device or the request is kept.
public struct AppleAdsRecord: Sendable, Equatable {
    public var attribution: Bool
    public var orgID: Int64?
    public var campaignID: Int64?
    public var adGroupID: Int64?
    public var keywordID: Int64?
    public var adID: Int64?
    /// `Download` or `Redownload`.
    public var conversionType: String?
    /// `Click` or `Impression`.
    public var claimType: String?
    public var countryOrRegion: String?
    /// Only in detailed records (the user allowed tracking).
    public var clickDate: String?

    public init(attribution: Bool, orgID: Int64? = nil, campaignID: Int64? = nil, adGroupID: Int64? = nil, keywordID: Int64? = nil,
                adID: Int64? = nil, conversionType: String? = nil, claimType: String? = nil, countryOrRegion: String? = nil,
                clickDate: String? = nil) {
        self.attribution = attribution
        self.orgID = orgID
        self.campaignID = campaignID
        self.adGroupID = adGroupID
        self.keywordID = keywordID
        self.adID = adID
        self.conversionType = conversionType
        self.claimType = claimType
        self.countryOrRegion = countryOrRegion
        self.clickDate = clickDate
    }

    /// The names Apple uses, in the order the export writes them.
    public static let fieldNames = ["attribution", "orgId", "campaignId", "adGroupId", "keywordId", "adId", "conversionType",
                                    "claimType", "countryOrRegion", "clickDate"]

    /// Reads Apple's JSON; nil when it has no boolean `attribution` (not a record). Fields of the
    /// wrong type are left out rather than guessed.
    public static func read(_ bytes: [UInt8]) -> AppleAdsRecord? {
        guard case .object(let members)? = try? JSONParser().parse(bytes) else { return nil }
        var fields: [String: JSONValue] = [:]
        for member in members { fields[member.key] = member.value }
        guard case .bool(let attribution)? = fields["attribution"] else { return nil }
        func id(_ key: String) -> Int64? {
            guard case .number(let text)? = fields[key], JSONValue.isIntegerLiteral(text) else { return nil }
            return Int64(text)
        }
        func text(_ key: String) -> String? {
            guard case .string(let s)? = fields[key], s.utf8.count <= 64 else { return nil }
            return s
        }
        return AppleAdsRecord(attribution: attribution, orgID: id("orgId"), campaignID: id("campaignId"), adGroupID: id("adGroupId"),
                              keywordID: id("keywordId"), adID: id("adId"), conversionType: text("conversionType"),
                              claimType: text("claimType"), countryOrRegion: text("countryOrRegion"), clickDate: text("clickDate"))
    }

    /// The record as JSON under Apple's names, absent fields left out.
    public var json: String {
        var out = "{\"attribution\":\(attribution)"
        for (key, value) in [("orgId", orgID), ("campaignId", campaignID), ("adGroupId", adGroupID), ("keywordId", keywordID), ("adId", adID)] {
            if let value { out += ",\"\(key)\":\(value)" }
        }
        for (key, value) in [("conversionType", conversionType), ("claimType", claimType), ("countryOrRegion", countryOrRegion), ("clickDate", clickDate)] {
            if let value {
                out += ",\"\(key)\":"
                JSONValue.writeString(value, to: &out)
            }
        }
        return out + "}"
    }
}
