import AppDevelopers
import AppleAds
import Marketers
import PCM
import Primitives
import SiteOwners

/// An advertiser's results over a period, one line per channel: web conversions (PCM), app
/// installs and re-engagements (postback copies), and Apple Ads attributed installs, per day, with
/// each channel's total and top campaigns.
///
/// The channels are never added: Apple Ads is also an ad network in SKAdNetwork and
/// AdAttributionKit, so one install can arrive as an Apple Ads attribution and as an install
/// postback; and a web conversion and an app install can be the same person.
struct Overview {
    struct Top {
        var name: String
        var detail: String
        var count: Int
    }

    struct Channel {
        var id: String
        var name: String
        /// Where its numbers come from, in the protocols' words.
        var source: String
        var perDay: [Int] = []
        var top: [Top] = []
        /// Why there are no numbers right now (a start still reading the log), or nil.
        var unavailable: String? = nil
        /// Apple Ads' installs by App Store placement, both ways they arrive, side by side; only
        /// on the Apple Ads line.
        var placements: [PlacementRow]? = nil
        /// Of Apple Ads' postbacks, those no key could check (SKAdNetwork 1.0 and 2.0): anyone
        /// could have sent them, so the page says how many.
        var unverifiablePostbacks = 0
        /// Estimated revenue (`AppsSummary.revenueLabel`) per currency: its total, each day's,
        /// and the campaigns with the most; only on the app installs line.
        var revenue: [Revenue]? = nil

        var total: Int { perDay.reduce(0, +) }
    }

    /// One placement: installs Apple's attribution API attributed there, and Apple Ads'
    /// winning first-window postbacks (SKAdNetwork, AdAttributionKit) whose campaign id names it.
    struct PlacementRow {
        var placement: AppleAdsPlacement
        var attributed = 0
        var postbacks = 0
    }

    struct Revenue {
        var currency: String
        var total: RevenueEstimate
        var perDay: [RevenueEstimate]
        var top: [(name: String, detail: String, estimate: RevenueEstimate)]
    }

    static let sideBySide = "Channels are shown side by side, never added: Apple Ads is also an ad network in SKAdNetwork and AdAttributionKit, so one install can arrive both as an Apple Ads attribution and as an install postback, and a web conversion and an app install can be the same person."
    static let topCount = 5

    var advertiser: Advertiser?
    var from: Int32
    var to: Int32
    var channels: [Channel] = []
    /// Every node's numbers (`scope=cluster`), or this node's.
    var cluster = false
    var clusterAvailable = false
    /// With `cluster`: each node's last export (`ClusterNodes.json`).
    var nodes: String?

    var days: [Int32] { Array(from...to) }

    /// The web channel from the PCM summary: one copy of each conversion, as the crosstab counts it.
    static func web(_ report: SummaryReport) -> Channel {
        let copy = report.crosstabCopy
        var channel = Channel(id: "web", name: "Web conversions",
                              source: "Private Click Measurement reports, \(copy == .destination ? "the advertiser's (destination)" : "the publisher's (source)") copy of each conversion")
        channel.perDay = report.perDay.map { copy == .destination ? $0.counts.destination : $0.counts.source }
        channel.top = report.byCampaign.map { row, counts in
            Top(name: row.campaign ?? "source id \(row.sourceID)", detail: "\(row.sourceSite), source id \(row.sourceID)",
                count: copy == .destination ? counts.destination : counts.source)
        }.filter { $0.count > 0 }.sorted { ($1.count, $0.name) < ($0.count, $1.name) }.prefix(topCount).map { $0 }
        return channel
    }

    /// App installs (with redownloads) and re-engagements, from the Apps view.
    static func apps(_ summary: AppsSummary, query: AppsSummary.Query, registry: AppRegistry) -> [Channel] {
        var installs = Channel(id: "app_installs", name: "App installs",
                               source: "winning SKAdNetwork and AdAttributionKit postbacks of the first window, installs and redownloads")
        var reEngagements = Channel(id: "re_engagements", name: "Re-engagements",
                                    source: "winning AdAttributionKit re-engagement postbacks of the first window")
        let perDay = summary.perDay ?? [:]
        installs.perDay = (query.from...query.to).map { (perDay[$0]?.installs ?? 0) + (perDay[$0]?.redownloads ?? 0) }
        reEngagements.perDay = (query.from...query.to).map { perDay[$0]?.reEngagements ?? 0 }
        var byCampaign: [AppsSummary.ConversionKey: AppsSummary.ConversionCounts] = [:]
        for (key, counts) in summary.conversions {
            var campaign = key
            campaign.value = nil
            campaign.schema = nil
            campaign.unverifiable = nil
            byCampaign[campaign, default: AppsSummary.ConversionCounts()].add(counts)
        }
        func top(_ count: (AppsSummary.ConversionCounts) -> Int) -> [Top] {
            byCampaign.map { key, counts in
                let network = registry.adNetwork(id: key.adNetwork)
                let app = Int(key.appID).flatMap { registry.app(id: $0) }
                return Top(name: network?.campaign(named: key.campaign) ?? "campaign \(key.campaign)",
                           detail: "\(network?.name ?? key.adNetwork), \(app?.name ?? "app \(key.appID)")", count: count(counts))
            }.filter { $0.count > 0 }.sorted { ($1.count, $0.name) < ($0.count, $1.name) }.prefix(topCount).map { $0 }
        }
        installs.top = top { $0.installs + $0.redownloads }
        reEngagements.top = top { $0.reEngagements }
        let campaigns = summary.revenueByCampaign(registry)
        let currencies = Set(campaigns.values.flatMap(\.keys)).sorted()
        installs.revenue = currencies.map { currency in
            let perDay = (query.from...query.to).map { summary.perDayRevenue?[$0]?[currency] ?? RevenueEstimate() }
            let top = campaigns.compactMap { key, byCurrency in
                byCurrency[currency].map { estimate in
                    let network = registry.adNetwork(id: key.adNetwork)
                    let app = Int(key.appID).flatMap { registry.app(id: $0) }
                    return (name: network?.campaign(named: key.campaign) ?? "campaign \(key.campaign)",
                            detail: "\(network?.name ?? key.adNetwork), \(app?.name ?? "app \(key.appID)")", estimate: estimate)
                }
            }.sorted { ($1.estimate.middle, $0.name, $0.detail) < ($0.estimate.middle, $1.name, $1.detail) }.prefix(topCount).map { $0 }
            return Revenue(currency: currency, total: campaigns.values.reduce(into: RevenueEstimate()) { sum, c in c[currency].map { sum.add($0) } },
                           perDay: perDay, top: top)
        }
        return [installs, reEngagements]
    }

    /// Apple Ads attributed installs, from the outbox's answers; by placement beside Apple Ads'
    /// own postbacks when `postbacks` (the Apps view's counts) can be read.
    static func appleAds(_ summary: AppleAdsSummary, postbacks: AppsSummary?, query: AppsSummary.Query, naming: AppleAdsNaming) -> Channel {
        var channel = Channel(id: "apple_ads", name: "Apple Ads attributed installs",
                              source: "Apple Ads tokens that Apple's attribution API attributed to a campaign")
        channel.perDay = (query.from...query.to).map { summary.attributedPerDay[$0] ?? 0 }
        var byCampaign: [Int64?: Int] = [:]
        for (key, row) in summary.installs { byCampaign[key.campaign, default: 0] += row.downloads + row.redownloads + row.other }
        channel.top = byCampaign.map { id, count in
            Top(name: naming.campaign(id) ?? id.map { "campaign \($0)" } ?? "no campaign", detail: id.map { "campaign id \($0)" } ?? "", count: count)
        }.filter { $0.count > 0 }.sorted { ($1.count, $0.name) < ($0.count, $1.name) }.prefix(topCount).map { $0 }
        var rows: [AppleAdsPlacement: PlacementRow] = [:]
        for (key, count) in summary.placements { rows[key.placement, default: PlacementRow(placement: key.placement)].attributed +|= count }
        for (key, counts) in postbacks?.conversions ?? [:] where key.adNetwork == AdNetwork.appleAds.id {
            let placement = AppleAdsPlacement(postbackCampaign: key.campaign) ?? .other
            rows[placement, default: PlacementRow(placement: placement)].postbacks +|= counts.installs &+ counts.redownloads
        }
        channel.placements = rows.values.filter { $0.attributed > 0 || $0.postbacks > 0 }.sorted { $0.placement < $1.placement }
        channel.unverifiablePostbacks = postbacks?.unverifiableCount(adNetwork: AdNetwork.appleAds.id) ?? 0
        return channel
    }

    func json() -> String {
        var out = "{\"advertiser\":"
        if let advertiser {
            out += "{\"id\":"
            JSONValue.writeString(advertiser.id, to: &out)
            out += ",\"name\":"
            JSONValue.writeString(advertiser.name, to: &out)
            out += ",\"sites\":" + AccessControl.list(Set(advertiser.sites)) + "}"
        } else { out += "null" }
        out += ",\"from\":\"\(SummaryQuery.text(from))\",\"to\":\"\(SummaryQuery.text(to))\""
        out += ",\"days\":[" + days.map { "\"\(SummaryQuery.text($0))\"" }.joined(separator: ",") + "]"
        out += ",\"channels\":[" + channels.map { channel in
            var o = "{\"id\":\"\(channel.id)\",\"name\":"
            JSONValue.writeString(channel.name, to: &o)
            o += ",\"source\":"
            JSONValue.writeString(channel.source, to: &o)
            if let unavailable = channel.unavailable {
                o += ",\"total\":null,\"per_day\":null,\"top\":[],\"unavailable\":"
                JSONValue.writeString(unavailable, to: &o)
                return o + "}"
            }
            o += ",\"total\":\(channel.total),\"per_day\":[" + channel.perDay.map(String.init).joined(separator: ",") + "],\"top\":["
            o += channel.top.map { top in
                var t = "{\"name\":"
                JSONValue.writeString(top.name, to: &t)
                t += ",\"detail\":"
                JSONValue.writeString(top.detail, to: &t)
                return t + ",\"count\":\(top.count)}"
            }.joined(separator: ",")
            o += "],\"unavailable\":null"
            if let placements = channel.placements {
                o += ",\"placements\":[" + placements.map {
                    "{\"placement\":\"\($0.placement.name)\",\"label\":\"\($0.placement.label)\",\"attributed\":\($0.attributed),\"postbacks\":\($0.postbacks)}"
                }.joined(separator: ",") + "],\"unverifiable_postbacks\":\(channel.unverifiablePostbacks)"
            }
            if let revenue = channel.revenue {
                func estimate(_ e: RevenueEstimate) -> String {
                    JSONValue.object(AppsSummary.estimateMembers(e)).serialized()
                }
                o += ",\"revenue\":{\"estimate\":"
                JSONValue.writeString(AppsSummary.revenueLabel, to: &o)
                o += ",\"currencies\":[" + revenue.map { r in
                    var c = "{\"currency\":"
                    JSONValue.writeString(r.currency, to: &c)
                    c += ",\"total\":" + estimate(r.total) + ",\"per_day\":[" + r.perDay.map(estimate).joined(separator: ",") + "],\"top\":["
                    c += r.top.map { top in
                        var t = "{\"name\":"
                        JSONValue.writeString(top.name, to: &t)
                        t += ",\"detail\":"
                        JSONValue.writeString(top.detail, to: &t)
                        return t + ",\"estimate\":" + estimate(top.estimate) + "}"
                    }.joined(separator: ",")
                    return c + "]}"
                }.joined(separator: ",") + "]}"
            }
            return o + "}"
        }.joined(separator: ",") + "]"
        out += ",\"scope\":\"\(cluster ? "cluster" : "node")\",\"cluster_available\":\(cluster || clusterAvailable)"
        if let nodes { out += ",\"nodes\":" + nodes }
        out += ",\"side_by_side\":"
        JSONValue.writeString(Self.sideBySide, to: &out)
        return out + "}"
    }
}
