import AppDevelopers
import AppleAds
import Foundation
import Testing
@testable import Endpoint

/// Apple Ads as an ad network: `com.apple.ads` is known without registering, its campaign ids are
/// its placements, and its SKAdNetwork 1.0 and 2.0 copies (P-192, uncheckable) are shown apart.
@Suite struct AppleAdsNetworkTests {
    static func facts(network: String, campaign: String, signature: String, version: String = "3.0") -> AppsSummary.Facts {
        let fields = ["ad-network-id": network, "campaign-id": campaign, "app-id": "1000000003", "version": version]
        return AppsSummary.Facts(skadnetwork: true, accepted: true, reasons: signature == "unverifiable" ? ["signature_unverifiable"] : [],
                                 signature: signature, development: false) { fields[$0] }
    }

    @Test func appleAdsIsKnownAndItsCampaignsArePlacements() throws {
        var registry = AppRegistry()
        let known = try #require(registry.adNetwork(id: "com.apple.ads"))
        #expect(known.name == "Apple Ads")
        #expect(["10", "20", "30", "40", "50", "1"].map { known.campaign(named: $0) }
                == ["Search Results", "Search Tab", "Today Tab", "Product Pages", nil, nil])
        #expect(registry.adNetworks.isEmpty && registry.registeredAdNetwork(id: "com.apple.ads") == nil, "known, not registered")
        // A registration of the same id takes its place.
        try registry.add(AdNetwork(id: "com.apple.ads", name: "Apple Ads (ours)", campaigns: [.init(campaignID: 10, name: "Search")]))
        #expect(registry.adNetwork(id: "com.apple.ads")?.name == "Apple Ads (ours)" && registry.adNetwork(id: "com.apple.ads")?.campaign(named: "10") == "Search")
        registry.removeAdNetwork(id: "com.apple.ads")
        #expect(registry.adNetwork(id: "com.apple.ads") == AdNetwork.appleAds)
    }

    @Test func theAppsViewNamesPlacementsAndShowsUncheckableCopiesApart() throws {
        var summary = AppsSummary(sites: ["app.example"])
        summary.add(Self.facts(network: "com.apple.ads", campaign: "10", signature: "apple"), retries: 0, count: 3)
        summary.add(Self.facts(network: "com.apple.ads", campaign: "40", signature: "unverifiable", version: "2.0"), retries: 0, count: 2)
        summary.add(Self.facts(network: "other.skadnetwork", campaign: "7", signature: "unverifiable", version: "1.0"), retries: 0)
        let query = AppsSummary.Query(site: nil, from: 20_000, to: 20_000)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(summary.json(AppRegistry(), query: query).utf8)) as? [String: Any])
        let rows = try #require(answer["conversions"] as? [[String: Any]])
        let apple = rows.filter { $0["ad_network"] as? String == "com.apple.ads" }
        #expect(Set(apple.compactMap { $0["campaign_name"] as? String }) == ["Search Results", "Product Pages"])
        #expect(apple.allSatisfy { $0["ad_network_name"] as? String == "Apple Ads" })
        let apart = try #require(answer["unverifiable_by_ad_network"] as? [[String: Any]])
        #expect(apart.count == 2)
        let appleApart = try #require(apart.first { $0["ad_network"] as? String == "com.apple.ads" })
        #expect(appleApart["postbacks"] as? Int == 2 && appleApart["ad_network_name"] as? String == "Apple Ads")
        // Counted, as every unverifiable postback is: with a note, not quarantined.
        #expect(apple.reduce(0) { $0 + ($1["installs"] as! Int) } == 5)
    }

    /// The overview's Apple Ads line puts both ways side by side, placement by placement, never added.
    @Test func theOverviewShowsPlacementsBothWays() throws {
        var postbacks = AppsSummary(sites: ["app.example"])
        postbacks.add(Self.facts(network: "com.apple.ads", campaign: "10", signature: "apple"), retries: 0, count: 4)
        postbacks.add(Self.facts(network: "com.apple.ads", campaign: "77", signature: "apple"), retries: 0)
        postbacks.add(Self.facts(network: "other.skadnetwork", campaign: "10", signature: "apple"), retries: 0, count: 9)
        var attributed = AppleAdsSummary()
        attributed.addAttributed(AppleAdsRecord(attribution: true, campaignID: 5, supplyPlacement: "APPSTORE_SEARCH_RESULTS"), count: 6)
        attributed.addAttributed(AppleAdsRecord(attribution: true, campaignID: 5, claimType: "Impression", supplyPlacement: "APPSTORE_TODAY_TAB"), count: 2)
        let query = AppsSummary.Query(site: nil, from: 20_000, to: 20_000)
        let channel = Overview.appleAds(attributed, postbacks: postbacks, query: query, naming: AppleAdsNaming(registry: AppRegistry()))
        let rows = try #require(channel.placements).map { "\($0.placement.name) \($0.attributed) \($0.postbacks)" }
        #expect(rows == ["search_results 6 4", "today_tab 2 0", "other 0 1"])
        #expect(Overview.appleAds(attributed, postbacks: nil, query: query, naming: AppleAdsNaming(registry: AppRegistry())).placements?.count == 2)
    }

    /// Anyone can send an uncheckable postback under any ad network's name: the count apart keeps
    /// 64 names, the rest together, and nothing is lost from the total.
    @Test func uncheckableCopiesKeepABoundedListOfNetworks() throws {
        var summary = AppsSummary(sites: ["app.example"])
        for n in 0..<200 { summary.add(Self.facts(network: "n\(n).skadnetwork", campaign: "1", signature: "unverifiable", version: "1.0"), retries: 0) }
        var merged = AppsSummary(sites: ["app.example"])
        merged.merge(summary)
        merged.merge(summary)
        for counted in [summary, merged] {
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(counted.json(AppRegistry(), query: .init(site: nil, from: 0, to: 0)).utf8)) as? [String: Any])
            let apart = try #require(answer["unverifiable_by_ad_network"] as? [[String: Any]])
            #expect(apart.count == AppsSummary.unverifiableNetworks + 1)
            #expect(apart.reduce(0) { $0 + ($1["postbacks"] as! Int) } == (counted.unverifiableCount(adNetwork: "n0.skadnetwork") == 2 ? 400 : 200))
        }
    }
}
