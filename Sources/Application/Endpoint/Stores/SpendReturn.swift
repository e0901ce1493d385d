import AppDevelopers
import Foundation
import Marketers
import Primitives

/// Spend against what it brought, per app, ad network and campaign over a period: the spend
/// given (`SpendSheet`), the installs the postbacks counted (installs and redownloads, as the
/// overview counts them, of checked signatures and the campaign's full id), cost per install, and
/// return on ad spend against the revenue estimate (`AppsSummary.revenueByCampaign`): low, middle
/// and high, each an estimate. Installs under a shortened id and unverifiable ones are shown
/// beside, never divided by. Spend and revenue are compared only in one currency: no exchange
/// rate is guessed.
struct SpendReturn {
    struct Row {
        var appID: Int
        var adNetwork: String
        var campaign: String
        var currency: String
        var spend = 0.0
        /// Installs and redownloads whose postbacks name this campaign in full and carry a
        /// signature that was checked.
        var installs = 0
        /// Installs whose postbacks name it by fewer digits (a lower privacy tier sends 2 or 3):
        /// they may be this campaign's or a sibling's, so they are shown, never divided by.
        var installsWithShorterIDs = 0
        /// Installs whose postbacks no key could check: anyone could have sent them.
        var unverifiableInstalls = 0
        /// The campaign's revenue estimate in the spend's currency; nil when it has none in it.
        var revenue: RevenueEstimate?
        /// Currencies the campaign's revenue is estimated in that are not the spend's.
        var otherCurrencies: [String] = []
    }

    var rows: [Row] = []

    /// `spend`: the period's rows the reader may read.
    init(spend: [SpendRow], summary: AppsSummary, registry: AppRegistry) {
        struct Key: Hashable { var app: Int; var network: String; var campaign: String; var currency: String }
        var byKey: [Key: Row] = [:]
        for row in spend {
            let key = Key(app: row.appID, network: row.adNetwork, campaign: row.campaign, currency: row.currency)
            byKey[key, default: Row(appID: row.appID, adNetwork: row.adNetwork, campaign: row.campaign, currency: row.currency)].spend += row.amount
        }
        var installs: [String: Int] = [:], unverifiable: [String: Int] = [:]
        for (key, counts) in summary.conversions {
            let name = "\(key.appID) \(key.adNetwork) \(key.campaign)"
            if key.unverifiable == true {
                unverifiable[name, default: 0] +|= counts.installs &+ counts.redownloads
            } else {
                installs[name, default: 0] +|= counts.installs &+ counts.redownloads
            }
        }
        let revenue = summary.revenueByCampaign(registry)
        var revenueByCampaign: [String: [String: RevenueEstimate]] = [:]
        for (key, byCurrency) in revenue { revenueByCampaign["\(key.appID) \(key.adNetwork) \(key.campaign)"] = byCurrency }
        rows = byKey.values.map { row in
            var row = row
            let name = "\(row.appID) \(row.adNetwork) \(row.campaign)"
            row.installs = installs[name] ?? 0
            row.unverifiableInstalls = unverifiable[name] ?? 0
            // "42" and "421" may stand for "4210": the same app and ad network, fewer digits.
            for digits in 2..<row.campaign.count {
                row.installsWithShorterIDs +|= installs["\(row.appID) \(row.adNetwork) \(row.campaign.prefix(digits))"] ?? 0
            }
            let estimates = revenueByCampaign[name] ?? [:]
            row.revenue = estimates[row.currency]
            row.otherCurrencies = estimates.keys.filter { $0 != row.currency }.sorted()
            return row
        }.sorted { ($1.spend, $0.appID, $0.adNetwork, $0.campaign, $0.currency) < ($0.spend, $1.appID, $1.adNetwork, $1.campaign, $1.currency) }
    }

    func json(_ registry: AppRegistry) -> JSONValue {
        func money(_ value: Double?) -> JSONValue { value.map(AppsSummary.amount) ?? .null }
        return .object([
            JSONMember(key: "estimate", value: .string("return on ad spend is the revenue estimate (\(AppsSummary.revenueLabel)) divided by the spend given; cost per install is the spend divided by installs and redownloads")),
            JSONMember(key: "campaigns", value: .array(rows.map { row in
                let network = registry.adNetwork(id: row.adNetwork)
                let roas = { (revenue: Double?) -> JSONValue in
                    guard let revenue, row.spend > 0 else { return .null }
                    return .number(String(format: "%.4f", revenue / row.spend))
                }
                return .object([
                    JSONMember(key: "app_id", value: .string(String(row.appID))),
                    JSONMember(key: "app_name", value: registry.app(id: row.appID).map { .string($0.name) } ?? .null),
                    JSONMember(key: "ad_network", value: .string(row.adNetwork)),
                    JSONMember(key: "ad_network_name", value: network.map { .string($0.name) } ?? .null),
                    JSONMember(key: "campaign", value: .string(row.campaign)),
                    JSONMember(key: "campaign_name", value: network?.campaign(named: row.campaign).map { .string($0) } ?? .null),
                    JSONMember(key: "currency", value: .string(row.currency)),
                    JSONMember(key: "spend", value: AppsSummary.amount(row.spend)),
                    JSONMember(key: "installs", value: .number(String(row.installs))),
                    JSONMember(key: "installs_with_shorter_ids", value: .number(String(row.installsWithShorterIDs))),
                    JSONMember(key: "unverifiable_installs", value: .number(String(row.unverifiableInstalls))),
                    JSONMember(key: "cost_per_install", value: row.installs > 0 ? AppsSummary.amount(row.spend / Double(row.installs)) : .null),
                    JSONMember(key: "revenue", value: row.revenue.map { .object(AppsSummary.estimateMembers($0)) } ?? .null),
                    JSONMember(key: "roas", value: .object([
                        JSONMember(key: "low", value: roas(row.revenue?.low)),
                        JSONMember(key: "middle", value: roas(row.revenue?.middle)),
                        JSONMember(key: "high", value: roas(row.revenue?.high)),
                    ])),
                    JSONMember(key: "revenue_in_other_currencies", value: .array(row.otherCurrencies.map { .string($0) })),
                ])
            })),
        ])
    }
}
