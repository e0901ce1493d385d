import Primitives

/// What Apple's attribution API answers for a token with 200, keeping only the documented fields
/// (seed 002, and AdServices' changelog since: `claimType` in March 2025, `impressionDate` for
/// view-through, `supplyPlacement` in January 2026, `PreOrder` conversions in October 2025):
/// nothing else about the device or the request is kept. docs/APPLE.md has the sources.
public struct AppleAdsRecord: Sendable, Equatable {
    public var attribution: Bool
    public var orgID: Int64?
    public var campaignID: Int64?
    public var adGroupID: Int64?
    public var keywordID: Int64?
    public var adID: Int64?
    /// `Download`, `Redownload` or `PreOrder` (the changelog writes `preorder`): see `conversion`.
    public var conversionType: String?
    /// `Click` or `Impression`: see `claim`.
    public var claimType: String?
    public var countryOrRegion: String?
    /// Only in detailed records (the user allowed tracking), for a click.
    public var clickDate: String?
    /// In place of `clickDate`, for a view (`claimType` `Impression`).
    public var impressionDate: String?
    /// Where the ad ran: see `placement`.
    public var supplyPlacement: String?

    public init(attribution: Bool, orgID: Int64? = nil, campaignID: Int64? = nil, adGroupID: Int64? = nil, keywordID: Int64? = nil,
                adID: Int64? = nil, conversionType: String? = nil, claimType: String? = nil, countryOrRegion: String? = nil,
                clickDate: String? = nil, impressionDate: String? = nil, supplyPlacement: String? = nil) {
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
        self.impressionDate = impressionDate
        self.supplyPlacement = supplyPlacement
    }

    /// The names Apple uses, in the order the export writes them.
    public static let fieldNames = ["attribution", "orgId", "campaignId", "adGroupId", "keywordId", "adId", "conversionType",
                                    "claimType", "countryOrRegion", "clickDate", "impressionDate", "supplyPlacement"]

    /// The values of `fieldNames`, in their order, null where absent: what every export writes.
    public static func fieldValues(_ record: AppleAdsRecord?) -> [JSONValue] {
        guard let r = record else { return Array(repeating: .null, count: fieldNames.count) }
        func number(_ value: Int64?) -> JSONValue { value.map { .number(String($0)) } ?? .null }
        func string(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        return [.bool(r.attribution), number(r.orgID), number(r.campaignID), number(r.adGroupID), number(r.keywordID), number(r.adID),
                string(r.conversionType), string(r.claimType), string(r.countryOrRegion), string(r.clickDate), string(r.impressionDate),
                string(r.supplyPlacement)]
    }

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
                              claimType: text("claimType"), countryOrRegion: text("countryOrRegion"), clickDate: text("clickDate"),
                              impressionDate: text("impressionDate"), supplyPlacement: text("supplyPlacement"))
    }

    /// The record as JSON under Apple's names, absent fields left out.
    public var json: String {
        var out = "{\"attribution\":\(attribution)"
        for (key, value) in [("orgId", orgID), ("campaignId", campaignID), ("adGroupId", adGroupID), ("keywordId", keywordID), ("adId", adID)] {
            if let value { out += ",\"\(key)\":\(value)" }
        }
        for (key, value) in [("conversionType", conversionType), ("claimType", claimType), ("countryOrRegion", countryOrRegion),
                           ("clickDate", clickDate), ("impressionDate", impressionDate), ("supplyPlacement", supplyPlacement)] {
            if let value {
                out += ",\"\(key)\":"
                JSONValue.writeString(value, to: &out)
            }
        }
        return out + "}"
    }

    /// What was installed, `conversionType` read without regard to case.
    public enum Conversion: Sendable, Equatable {
        case download, redownload, preOrder
        /// Absent, or a type this endpoint does not know yet.
        case other
    }

    public var conversion: Conversion {
        switch conversionType?.lowercased() {
        case "download": .download
        case "redownload": .redownload
        case "preorder": .preOrder
        default: .other
        }
    }

    /// Whether the ad was tapped or seen, `claimType` read without regard to case.
    public enum Claim: UInt8, Sendable, CaseIterable, Comparable {
        /// Absent (records before March 2025) or unknown.
        case unstated = 0
        case click = 1
        case impression = 2

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

        public var name: String {
            switch self {
            case .unstated: "unstated"
            case .click: "click"
            case .impression: "view"
            }
        }
    }

    public var claim: Claim {
        switch claimType?.lowercased() {
        case "click": .click
        case "impression": .impression
        default: .unstated
        }
    }

    public var placement: AppleAdsPlacement { AppleAdsPlacement(supplyPlacement: supplyPlacement) }

    /// The id Apple's answer for a token from a device in Developer Mode gives its organization,
    /// campaign and ad group, whatever the ad (docs/APPLE.md: its keyword and ad ids are those of
    /// Apple's other examples). It names no campaign and must never be counted as one.
    public static let testPayloadID: Int64 = 1_234_567_890

    /// Whether this is Apple's test answer: attributed, with its organization, campaign and ad
    /// group all the test id. One of them changed is a real answer.
    public var isTestPayload: Bool {
        attribution && orgID == Self.testPayloadID && campaignID == Self.testPayloadID && adGroupID == Self.testPayloadID
    }
}
