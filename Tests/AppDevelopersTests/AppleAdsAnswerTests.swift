import AppleAds
import Primitives
import Testing

/// Apple's attribution answer as it is since 2025–2026 (docs/APPLE.md): the claim, the view's
/// date, the placement, pre-orders, and the Developer Mode test answer, read from hostile JSON too.
@Suite struct AppleAdsAnswerTests {
    /// Apple's Developer Mode answer, as its AAAttribution page prints it.
    static let testPayload = #"{"attribution":true,"orgId":1234567890,"campaignId":1234567890,"conversionType":"Download","clickDate":"2020-04-08T17:17Z","claimType":"Click","adGroupId":1234567890,"countryOrRegion":"US","keywordId":123222,"adId":542317136,"supplyPlacement":"APPSTORE_SEARCH_RESULTS"}"#
    /// Apple's view-through example.
    static let view = #"{"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","impressionDate":"2024-10-08T17:17Z","claimType":"Impression","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136,"supplyPlacement":"APPSTORE_TODAY_TAB"}"#

    @Test func apple2026FieldsAreReadAndWrittenBack() throws {
        let record = try #require(AppleAdsRecord.read(Array(Self.view.utf8)))
        #expect(record.claim == .impression && record.impressionDate == "2024-10-08T17:17Z" && record.clickDate == nil)
        #expect(record.placement == .todayTab && record.conversion == .download && !record.isTestPayload)
        // What the log keeps reads back the same.
        #expect(AppleAdsRecord.read(Array(record.json.utf8)) == record)
        #expect(AppleAdsRecord.fieldValues(record).count == AppleAdsRecord.fieldNames.count)
        #expect(AppleAdsRecord.fieldValues(nil).allSatisfy { $0 == .null })
    }

    @Test func theTestPayloadIsKnownAndOneChangedIdIsARealAnswer() throws {
        let test = try #require(AppleAdsRecord.read(Array(Self.testPayload.utf8)))
        #expect(test.isTestPayload)
        var history = AppleAdsCallPolicy.History()
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        #expect(AppleAdsCallPolicy.decide(status: 200, record: test, history: &history, receivedAt: now, now: now) == .final(.test))
        for (key, changed) in [("orgId", "1234567891"), ("campaignId", "1234567899"), ("adGroupId", "234567890")] {
            let text = Self.testPayload.replacingOccurrences(of: "\"\(key)\":1234567890", with: "\"\(key)\":\(changed)")
            let real = try #require(AppleAdsRecord.read(Array(text.utf8)))
            #expect(!real.isTestPayload, "\(key) changed")
            #expect(AppleAdsCallPolicy.decide(status: 200, record: real, history: &history, receivedAt: now, now: now) == .final(.attributed))
        }
        // Not attributed, or an id as a string: not the test answer.
        for text in [Self.testPayload.replacingOccurrences(of: "\"attribution\":true", with: "\"attribution\":false"),
                     Self.testPayload.replacingOccurrences(of: "\"campaignId\":1234567890", with: "\"campaignId\":\"1234567890\"")] {
            #expect(AppleAdsRecord.read(Array(text.utf8))?.isTestPayload == false, "\(text)")
        }
    }

    @Test func placementsClaimsAndConversionsAreReadWithoutRegardToCase() {
        let placements: [(String?, AppleAdsPlacement)] = [
            ("APPSTORE_SEARCH_RESULTS", .searchResults), ("appstore_search_tab", .searchTab), ("AppStore_Today_Tab", .todayTab),
            ("APPSTORE_PRODUCT_PAGES", .productPages), ("APPSTORE_PRODUCT_PAGES_BROWSE", .other), ("MAPS_SEARCH_RESULTS", .other),
            ("", .other), (nil, .unstated),
        ]
        for (text, placement) in placements { #expect(AppleAdsPlacement(supplyPlacement: text) == placement, "\(String(describing: text))") }
        let conversions: [(String?, AppleAdsRecord.Conversion)] = [
            ("Download", .download), ("REDOWNLOAD", .redownload), ("PreOrder", .preOrder), ("preorder", .preOrder),
            ("pre-order", .other), ("newdownloads", .other), (nil, .other),
        ]
        for (text, conversion) in conversions { #expect(AppleAdsRecord(attribution: true, conversionType: text).conversion == conversion) }
        let claims: [(String?, AppleAdsRecord.Claim)] = [("Click", .click), ("IMPRESSION", .impression), ("View", .unstated), (nil, .unstated)]
        for (text, claim) in claims { #expect(AppleAdsRecord(attribution: true, claimType: text).claim == claim) }
        // Apple Ads postbacks' campaign ids, and nothing else, name a placement.
        #expect(["10", "20", "30", "40"].compactMap(AppleAdsPlacement.init(postbackCampaign:)) == [.searchResults, .searchTab, .todayTab, .productPages])
        #expect(["1", "11", "010", "100", "4", ""].compactMap(AppleAdsPlacement.init(postbackCampaign:)).isEmpty)
        #expect(AppleAdsPlacement.allCases.compactMap(\.postbackCampaign).compactMap(AppleAdsPlacement.init(postbackCampaign:)).count == 4)
    }

    /// Wrong types, huge strings and odd values: each field is left out rather than guessed, and
    /// nothing traps.
    @Test func hostileValuesAreLeftOut() throws {
        let huge = String(repeating: "A", count: 100_000)
        let cases = [
            #"{"attribution":true,"supplyPlacement":5,"claimType":["Click"],"impressionDate":{"a":1}}"#,
            #"{"attribution":true,"supplyPlacement":"\#(huge)","impressionDate":"\#(huge)","conversionType":"\#(huge)"}"#,
            #"{"attribution":true,"supplyPlacement":null,"claimType":null,"campaignId":1e3,"orgId":-1,"adGroupId":99999999999999999999}"#,
            #"{"attribution":true,"supplyPlacement":"APPSTORE_SEARCH_RESULTS\u0000","claimType":"Cl\u0069ck"}"#,
        ]
        for text in cases {
            let record = try #require(AppleAdsRecord.read(Array(text.utf8)), "\(text.prefix(80))")
            #expect(record.supplyPlacement == nil || record.supplyPlacement!.utf8.count <= 64)
            #expect(record.impressionDate == nil && record.conversionType == nil || text.contains("\\u"))
            #expect(record.campaignID == nil && record.adGroupID == nil)
            #expect(!record.isTestPayload)
            #expect(AppleAdsRecord.read(Array(record.json.utf8)) == record)
        }
        let nul = try #require(AppleAdsRecord.read(Array(cases[3].utf8)))
        #expect(nul.placement == .other && nul.claim == .click)
    }
}
