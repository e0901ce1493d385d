import AppleAdsStandIn
import Primitives
import SiteOwners

/// The app developer's server-side jobs in the demo: Apple Ads tokens (answered by a stand-in
/// for Apple's API that runs inside the demo), conversion-value questions from installs, and an
/// Info.plist check.
enum DemoAppServerJobs {
    /// Names for the stand-in's campaigns, registered as an app developer would.
    static let appleAdsCampaigns = [
        #"{"campaign_id":542370539,"name":"Puzzle search","ad_groups":[{"id":542317095,"name":"Exact match"},{"id":542317096,"name":"Broad match"}],"keywords":[{"id":87675432,"name":"puzzle game"},{"id":87675433,"name":"brain teaser"},{"id":87675434,"name":"logic puzzles"}]}"#,
        #"{"campaign_id":642370540,"name":"Today tab","ad_groups":[{"id":642317100,"name":"Today tab ad"}]}"#,
    ]

    /// A token posted at a moment, with what the stand-in answers for it.
    struct AppleAdsToken {
        var time: Timestamp
        var token: String
        var steps: [AppleAdsStandIn.Step]
    }

    /// Apple's answer as it is since 2026: the placement, and a view's date in place of a tap's.
    static func record(campaign: Int64, adGroup: Int64, keyword: Int64?, redownload: Bool, claim: String, placement: String) -> String {
        let keywordField = keyword.map { #","keywordId":\#($0)"# } ?? ""
        let date = claim == "Impression" ? #""impressionDate":"2026-01-08T17:17Z""# : #""clickDate":"2026-01-08T17:17Z""#
        return #"{"attribution":true,"orgId":40669820,"campaignId":\#(campaign),"conversionType":"\#(redownload ? "Redownload" : "Download")","claimType":"\#(claim)",\#(date),"adGroupId":\#(adGroup),"countryOrRegion":"US"\#(keywordField),"adId":\#(adGroup + 41),"supplyPlacement":"\#(placement)"}"#
    }

    /// Apple's answer to a token from a device in Developer Mode (docs/APPLE.md).
    static let testPayload = #"{"attribution":true,"orgId":1234567890,"campaignId":1234567890,"conversionType":"Download","clickDate":"2020-04-08T17:17Z","claimType":"Click","adGroupId":1234567890,"countryOrRegion":"US","keywordId":123222,"adId":542317136,"supplyPlacement":"APPSTORE_SEARCH_RESULTS"}"#

    /// Installs over the demo's weeks: most attributed to the search campaign's keywords or the
    /// Today tab, some organic (attribution false), two invalid tokens, a few answered only after
    /// 404s or an outage, the developer's test device, and two still waiting for Apple at the end.
    static func appleAdsTokens(start: Timestamp, days: Int, end: Timestamp, seed: UInt64 = 77) -> [AppleAdsToken] {
        var random = SplitMix64(seed: seed)
        var out: [AppleAdsToken] = []
        let hour = TimingModel.hour
        for day in 0..<days {
            for k in 0..<(1 + Int(random.next() % 3)) {
                let time = Timestamp(millisecondsSinceEpoch: start.millisecondsSinceEpoch + Int64(day) * 24 * hour + Int64(random.next() % UInt64(24 * hour)))
                let token = "demo-token-\(day)-\(k)-" + String(random.next() % 1_000_000, radix: 36)
                let pick = random.next() % 20
                let answer: String
                switch pick {
                case 0..<8:
                    let adGroup: Int64 = pick % 2 == 0 ? 542317095 : 542317096
                    let keyword: Int64 = [87675432, 87675433, 87675434][Int(random.next() % 3)]
                    answer = record(campaign: 542370539, adGroup: adGroup, keyword: keyword, redownload: pick == 7, claim: "Click",
                                    placement: "APPSTORE_SEARCH_RESULTS")
                case 8..<11:
                    answer = record(campaign: 642370540, adGroup: 642317100, keyword: nil, redownload: false, claim: pick == 10 ? "Impression" : "Click",
                                    placement: "APPSTORE_TODAY_TAB")
                default:
                    answer = #"{"attribution":false}"#
                }
                var steps: [AppleAdsStandIn.Step] = [.answer(200, answer)]
                if day % 5 == 2 && k == 0 { steps = [.answer(404, ""), .answer(404, ""), .answer(200, answer)] }
                if day == 11 && k == 0 { steps = [.answer(500, ""), .drop, .answer(200, answer)] }
                if day == 8 && k == 0 || day == 16 && k == 0 { steps = [.answer(400, "")] }
                out.append(AppleAdsToken(time: time, token: token, steps: steps))
            }
        }
        // The developer's own phone, in Developer Mode, on the first day: Apple's test answer.
        out.append(AppleAdsToken(time: Timestamp(millisecondsSinceEpoch: start.millisecondsSinceEpoch + 2 * hour),
                                 token: "demo-token-developer-mode", steps: [.answer(200, testPayload)]))
        // Installed in the demo's last hours: Apple has no record yet.
        for (k, hours) in [3, 1].enumerated() {
            out.append(AppleAdsToken(time: Timestamp(millisecondsSinceEpoch: end.millisecondsSinceEpoch - Int64(hours) * hour),
                                     token: "demo-token-late-\(k)", steps: [.answer(404, "")]))
        }
        return out
    }

    /// An install's counters as the app sends them, the `n`th of the demo's.
    static func conversionValueQuestion(appID: Int, firstLaunch: Timestamp, n: Int) -> String {
        let levels = n % 9
        let trial = n % 3 == 0 ? #","trial_start":1"# : ""
        let revenue = n % 5 == 0 ? #","revenue":{"EUR":\#(Double(n % 40) + 0.99)}"# : ""
        return #"{"app_id":\#(appID),"first_launch":"\#(firstLaunch.rfc3339)","events":{"level_complete":\#(levels)\#(trial)}\#(revenue)}"#
    }

    /// Demo Puzzle Lite's Info.plist: its endpoint is a subdomain, so devices send its copies to a
    /// host this endpoint does not serve, and the app falls silent (`/api/arrivals`).
    static let liteInfoPlist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>CFBundleIdentifier</key><string>example.demo.puzzle-lite</string>
          <key>NSAdvertisingAttributionReportEndpoint</key><string>https://ads.app.example</string>
          <key>SKAdNetworkItems</key><array><dict><key>SKAdNetworkIdentifier</key><string>demo-ads.skadnetwork</string></dict></array>
        </dict></plist>
        """

    /// The advertisers: the publisher, and the brand with its shop and its apps.
    static let advertisers = [
        #"{"id":"acme","name":"Acme Puzzles","sites":["shop.example","app.example"]}"#,
        #"{"id":"news","name":"News Daily","sites":["news.example"]}"#,
    ]

    /// The demo app's Info.plist, with two mistakes the check finds.
    static let infoPlist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>CFBundleIdentifier</key><string>example.demo.puzzle</string>
          <key>NSAdvertisingAttributionReportEndpoint</key><string>https://app.example</string>
          <key>AttributionCopyEndpoint</key><string>https://app.example</string>
          <key>AdAttributionKitConfigurations</key><dict>
            <key>AttributionWindows</key><dict>
              <key>global</key><dict><key>install</key><dict><key>view</key><integer>3</integer><key>ignoreInteractionType</key><string>view</string></dict></dict>
              <key>demo.adattributionkit</key><dict><key>install</key><dict><key>click</key><integer>14</integer></dict></dict>
            </dict>
            <key>AttributionCooldown</key><dict><key>reengagement-cooldown-hours</key><integer>48</integer></dict>
          </dict>
          <key>SKAdNetworkItems</key><array><dict><key>SKAdNetworkIdentifier</key><string>demo-ads.skadnetwork</string></dict></array>
        </dict></plist>
        """
}
