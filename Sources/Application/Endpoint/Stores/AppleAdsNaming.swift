import AppDevelopers

/// The one rule for an Apple Ads id's name: the name typed in (`/api/apple-ads/campaigns`) wins;
/// else the Apple Ads Platform API's (`AppleAdsNames`, with `--apple-ads-platform`); else none.
struct AppleAdsNaming {
    let registry: AppRegistry
    var lookedUp: AppleAdsNames? = nil

    func campaign(_ id: Int64?) -> String? {
        registry.appleAdsCampaign(id: id)?.name ?? lookedUp?.campaign(id)
    }

    func adGroup(_ id: Int64?, campaign: Int64?) -> String? {
        registry.appleAdsCampaign(id: campaign)?.adGroupName(id) ?? lookedUp?.adGroup(id)
    }

    func keyword(_ id: Int64?, campaign: Int64?) -> String? {
        registry.appleAdsCampaign(id: campaign)?.keywordName(id) ?? lookedUp?.keyword(id)
    }
}
