import Foundation
import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

private let rules = SiteRules()

private func parse(_ text: String) -> JSONValue { try! JSONParser().parse(Array(text.utf8)) }

private func conversionProblem(_ json: String, into registry: Registry = Registry()) -> RequestProblem? {
    var r = registry
    do {
        try r.add(try RegistryInput.conversion(from: parse(json)), siteRules: rules)
        return nil
    } catch { return error }
}

private func campaignProblem(_ json: String, into registry: Registry = Registry()) -> RequestProblem? {
    var r = registry
    do {
        try r.add(try RegistryInput.campaign(from: parse(json)), siteRules: rules)
        return nil
    } catch { return error }
}

private func campaignJSON(name: String = "Winter", id: String = "42", destination: String = "\"shop.example\"",
                          starts: String = "2026-11-01T00:00:00Z", ends: String? = "2026-11-30T00:00:00Z",
                          source: String = "news.example") -> String {
    #"{"source_site":"\#(source)","source_id":\#(id),"destination":\#(destination),"name":"\#(name)","starts_at":"\#(starts)""#
        + (ends.map { #","ends_at":"\#($0)""# } ?? "") + "}"
}

@Suite struct RegistryTests {
    @Test func aValidConversionIsRegistered() throws {
        var r = Registry()
        try r.add(try RegistryInput.conversion(from: parse(#"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#)), siteRules: rules)
        #expect(r.conversion(site: "shop.example", name: "purchase") == Conversion(site: "shop.example", name: "purchase", triggerData: 5, priority: 40))
    }

    /// Every invalid conversion names its field and rule.
    @Test(arguments: [
        (#"{"site":"shop.example","name":"a","trigger_data":16}"#, "trigger_data", "out_of_range"),
        (#"{"site":"shop.example","name":"a","trigger_data":-1}"#, "trigger_data", "out_of_range"),
        (#"{"site":"shop.example","name":"a","trigger_data":5,"priority":64}"#, "priority", "out_of_range"),
        (#"{"site":"shop.example","name":"a","trigger_data":"5"}"#, "trigger_data", "wrong_type"),
        (#"{"site":"shop.example","name":"a","trigger_data":5.0}"#, "trigger_data", "wrong_type"),
        (#"{"site":"co.uk","name":"a","trigger_data":5}"#, "site", "not_registrable_domain"),
        (#"{"site":"www.shop.example","name":"a","trigger_data":5}"#, "site", "not_registrable_domain"),
        (#"{"site":"shop.example","name":"","trigger_data":5}"#, "name", "invalid_name"),
        (#"{"site":"shop.example","trigger_data":5}"#, "name", "missing_field"),
        (#"{"site":"shop.example","name":"a","trigger_data":5,"colour":1}"#, "colour", "unknown_field"),
    ])
    func invalidConversions(json: String, field: String, rule: String) {
        let problem = conversionProblem(json)
        #expect(problem?.field == field)
        #expect(problem?.rule == rule)
        #expect(problem.map { $0.kind == .invalid || $0.kind == .malformed } == true)
    }

    @Test func conversionNamesAreUniquePerSite() throws {
        var r = Registry()
        try r.add(Conversion(site: "shop.example", name: "purchase", triggerData: 5, priority: 40), siteRules: rules)
        let problem = conversionProblem(#"{"site":"shop.example","name":"purchase","trigger_data":6}"#, into: r)
        #expect(problem?.kind == .conflict)
        #expect(problem?.rule == "duplicate_name")
        // Another site may use the name.
        #expect(conversionProblem(#"{"site":"store.example","name":"purchase","trigger_data":6}"#, into: r) == nil)
    }

    @Test(arguments: [
        (campaignJSON(id: "256"), "source_id", "out_of_range"),
        (campaignJSON(destination: "\"co.uk\""), "destination", "not_registrable_domain"),
        (campaignJSON(destination: "\"news.example\""), "destination", "same_site"),
        (campaignJSON(ends: "2026-10-01T00:00:00Z"), "ends_at", "ends_before_start"),
        (campaignJSON(starts: "yesterday"), "starts_at", "invalid_time"),
        (campaignJSON(source: "example"), "source_site", "not_registrable_domain"),
    ])
    func invalidCampaigns(json: String, field: String, rule: String) {
        let problem = campaignProblem(json)
        #expect(problem?.field == field)
        #expect(problem?.rule == rule)
    }

    @Test func anOriginIsTakenForItsSite() throws {
        let c = try RegistryInput.campaign(from: parse(campaignJSON(destination: "\"https://shop.example\"")))
        #expect(c.destination == "shop.example")
    }

    @Test func aReusedIdMustWaitSevenDaysAndFortyEightHoursAfterTheEnd() throws {
        var r = Registry()
        try r.add(try RegistryInput.campaign(from: parse(campaignJSON())), siteRules: rules)
        // Ends 2026-11-30: busy until 2026-12-09T00:00:00Z.
        let overlap = campaignProblem(campaignJSON(name: "Spring", starts: "2026-12-09T00:00:00Z", ends: nil), into: r)
        #expect(overlap?.kind == .conflict)
        #expect(overlap?.rule == "source_id_in_use")
        #expect(overlap?.detail.contains("free again from 2026-12-09T00:00:00.001Z") == true)
        #expect(campaignProblem(campaignJSON(name: "Spring", starts: "2026-12-09T00:00:00.001Z", ends: nil), into: r) == nil)
        // Another id, or another publisher, is free at once.
        #expect(campaignProblem(campaignJSON(name: "Spring", id: "43", starts: "2026-11-15T00:00:00Z"), into: r) == nil)
        #expect(campaignProblem(campaignJSON(name: "Spring", starts: "2026-11-15T00:00:00Z", source: "blog.example"), into: r) == nil)
        #expect(campaignProblem(campaignJSON(name: "Winter", id: "9", starts: "2027-01-01T00:00:00Z", ends: nil), into: r)?.rule == "duplicate_name")
    }

    @Test func anOpenEndedCampaignHoldsItsIdUntilItGetsAnEnd() throws {
        var r = Registry()
        try r.add(try RegistryInput.campaign(from: parse(campaignJSON(ends: nil))), siteRules: rules)
        let problem = campaignProblem(campaignJSON(name: "Later", starts: "2027-06-01T00:00:00Z", ends: "2027-07-01T00:00:00Z"), into: r)
        #expect(problem?.rule == "source_id_in_use")
        #expect(problem?.detail.contains("no end date") == true)
    }

    @Test func registryRoundTripsThroughJSON() throws {
        var r = Registry()
        try r.add(Conversion(site: "shop.example", name: "purchase", triggerData: 5, priority: 40), siteRules: rules)
        try r.add(try RegistryInput.campaign(from: parse(campaignJSON())), siteRules: rules)
        let data = try JSONEncoder().encode(r)
        #expect(try JSONDecoder().decode(Registry.self, from: data) == r)
    }
}

@Suite struct TriggerPathTests {
    private func parse(_ path: String, _ query: [(String, String)] = []) throws(RequestProblem) -> TriggerPath {
        try TriggerPath.parse(path: Substring(path), queryItems: query.map { (name: $0.0, value: $0.1) }, siteRules: rules)
    }

    @Test func acceptsWhatWebKitAccepts() throws {
        #expect(try parse(TriggerPath.prefix + "05") == TriggerPath(triggerData: 5, priority: 0, attributionSource: nil))
        #expect(try parse(TriggerPath.prefix + "15/63") == TriggerPath(triggerData: 15, priority: 63, attributionSource: nil))
        #expect(try parse(TriggerPath.prefix + "00/00", [("attributionSource", "https://news.example")]).attributionSource == "news.example")
        #expect(try parse(TriggerPath.prefix + "05/40", [("attributionDestinationNonce", "ABCDEFGHIJKLMNOPQRSTUV")]).priority == 40)
    }

    @Test(arguments: [
        ("5", "invalid_trigger_path"), ("5/1", "invalid_trigger_path"), ("16", "out_of_range"), ("05/64", "out_of_range"),
        ("05/", "invalid_trigger_path"), ("05/40/", "invalid_trigger_path"), ("05/40/01", "invalid_trigger_path"),
        ("", "invalid_trigger_path"), ("0x", "invalid_trigger_path"), ("005", "invalid_trigger_path"),
    ])
    func refusesWhatWebKitRefuses(suffix: String, rule: String) {
        #expect(throws: RequestProblem.self) { try parse(TriggerPath.prefix + suffix) }
        do { _ = try parse(TriggerPath.prefix + suffix) } catch { #expect(error.rule == rule) }
    }

    @Test(arguments: [
        ("utm_source", "x", "unknown_query_parameter"),
        ("attributionSource", "http://news.example", "invalid_source"),
        ("attributionSource", "https://news.example/path", "invalid_source"),
        ("attributionSource", "https://co.uk", "invalid_source"),
        ("attributionDestinationNonce", "short", "invalid_nonce"),
    ])
    func refusesBadQueries(name: String, value: String, rule: String) {
        do {
            _ = try parse(TriggerPath.prefix + "05/40", [(name, value)])
            Issue.record("accepted \(name)=\(value)")
        } catch {
            #expect(error.rule == rule)
            #expect(error.kind == .malformed)
        }
    }

    @Test func thePixelRedirectsToTheTwoDigitForm() throws {
        let purchase = Conversion(site: "shop.example", name: "purchase", triggerData: 5, priority: 40)
        #expect(try ConversionPixel.location(site: "shop.example", conversion: purchase, source: "https://news.example", siteRules: rules)
            == "https://shop.example/.well-known/private-click-measurement/trigger-attribution/05/40?attributionSource=https://news.example")
        #expect(try ConversionPixel.location(site: "news.example", conversion: purchase, source: nil, siteRules: rules)
            == "https://news.example/.well-known/private-click-measurement/trigger-attribution/05/40")
        do {
            _ = try ConversionPixel.location(site: "shop.example", conversion: purchase, source: "news.example", siteRules: rules)
            Issue.record("a source without https:// was accepted")
        } catch {
            #expect(error.field == "source")
        }
    }
}

@Suite struct ReportFactsTests {
    @Test func readsWebKitBodiesAndFallsBackForOthers() {
        var sites = InternedStrings()
        let webkit = Array(#"{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}"#.utf8)
        #expect(ReportFacts.scan(webkit, sites: &sites) == ReportFacts(sourceSite: "news.example", sourceID: 42, attributedOnSite: "shop.example", triggerData: 5))
        let dashed = Array(#"{"source-engagement-type":"click","source-site":"news.example","source-id":7,"attributed-on-site":"shop.example","trigger-data":1,"report-version":1}"#.utf8)
        #expect(ReportFacts.scan(dashed, sites: &sites)?.sourceID == 7)
        // A nested unknown field with a known name must not be read instead of the real one.
        let nested = Array(#"{"extra":{"source_site":"evil.example","source_id":9},"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}"#.utf8)
        #expect(ReportFacts.scan(nested, sites: &sites)?.sourceSite == "news.example")
        #expect(ReportFacts.scan(nested, sites: &sites)?.sourceID == 42)
        let tokens = Array(#"{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3,"source_secret_token":"AAAA","source_secret_token_signature":"BBBB"}"#.utf8)
        #expect(ReportFacts.scan(tokens, sites: &sites)?.hasTokens == true)
    }
}
