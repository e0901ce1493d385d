import Foundation
import Primitives
import SiteOwners
import Signatures
import SKAdNetwork

/// The app developer's side of the demo: an app with its conversion-value schema, two ad
/// networks, and three weeks of postback copies signed with a demo key that the demo endpoint
/// trusts (`--postback-key demo-key=…`), so the Apps view is full on first open. Some arrive
/// twice, as devices retry; one is tampered with; every SKAdNetwork version appears once; and
/// Apple's own development postback shows what a development flow looks like.
enum DemoPostbacks {
    /// A fixed scalar, so the demo's key (and its signatures' verdicts) are the same every run.
    /// It signs demo postbacks only; the endpoint labels what it signs `test_key`.
    static let key = try! P256PrivateKey(rawRepresentation: Array(repeating: 0x2A, count: 31) + [0x07])
    static let keyName = "demo-key"
    static var keySPKI: String { Data(key.publicKey.subjectPublicKeyInfo).base64EncodedString() }

    /// An app registered at app.example whose copies never arrive: its Info.plist names another
    /// endpoint (`DemoAppServerJobs.liteInfoPlist`), which the arrivals warning and the Info.plist
    /// check both point at.
    static let liteApp = #"{"app_id":6443210988,"site":"app.example","name":"Demo Puzzle Lite","schema":{}}"#
    static let appID = 6443210987
    static let app = #"{"app_id":6443210987,"site":"app.example","name":"Demo Puzzle","schema":{"fine":[{"from":0,"to":0,"meaning":"installed"},{"from":1,"to":9,"meaning":"levels completed","events":["level_complete"]},{"from":10,"to":29,"meaning":"trial started","events":["trial_start"]},{"from":30,"to":63,"meaning":"purchase","revenue":{"min":0.99,"max":49.99,"currency":"EUR"}}],"coarse":{"low":"installed","medium":"played a week","high":"paid"},"coarse_from_fine":{"medium":10,"high":30},"lock_at":{"fine":63,"coarse":"high"}}}"#
    static let adNetworks = [
        #"{"id":"demo-ads.skadnetwork","name":"Demo Ads","campaigns":[{"source_identifier":"42","name":"Holiday (2 digits: either ad)"},{"source_identifier":"4210","name":"Holiday video"},{"source_identifier":"4211","name":"Puzzle fans"},{"campaign_id":12,"name":"Legacy banner"}]}"#,
        #"{"id":"demo.adattributionkit","name":"Demo Kit Ads","campaigns":[{"source_identifier":"1234","name":"Win back lapsed players"},{"source_identifier":"5678","name":"Launch"}]}"#,
    ]

    static let skadnetworkPath = "/.well-known/skadnetwork/report-attribution/"
    static let adattributionkitPath = "/.well-known/appattribution/report-attribution/"

    /// A postback to send at a moment of the demo's clock.
    struct Delivery {
        var time: Timestamp
        var path: String
        var body: String
    }

    static func traffic(start: Timestamp, days: Int, end: Timestamp, seed: UInt64 = 4242) -> [Delivery] {
        var random = SplitMix64(seed: seed)
        var out: [Delivery] = []
        let hour = TimingModel.hour
        var n = 0
        func at(_ day: Int) -> Timestamp {
            Timestamp(millisecondsSinceEpoch: start.millisecondsSinceEpoch + Int64(day) * TimingModel.day + Int64(random.next() % UInt64(24 * hour)))
        }
        for day in 0..<days {
            for _ in 0..<(3 + Int(random.next() % 5)) {
                n += 1
                // An install through SKAdNetwork 4: the first window's postback, then maybe the later two.
                let tier = random.next() % 4
                let sourceID = ["4210", "4211"][Int(random.next() % 2)]
                let digits = tier == 3 ? sourceID : tier == 2 ? String(sourceID.prefix(3)) : String(sourceID.prefix(2))
                for window in 0..<(1 + Int(random.next() % 3)) {
                    let fine = window == 0 && tier >= 2
                    var fields: [(String, String)] = [
                        ("version", #""4.0""#), ("ad-network-id", #""demo-ads.skadnetwork""#),
                        ("source-identifier", "\"\(window == 0 ? digits : String(sourceID.prefix(2)))\""), ("app-id", String(appID)),
                        ("transaction-id", "\"\(uuid(n))\""), ("redownload", random.next() % 8 == 0 ? "true" : "false"),
                        ("fidelity-type", random.next() % 5 == 0 ? "0" : "1"), ("did-win", "true"), ("postback-sequence-index", String(window)),
                    ]
                    if tier == 3 { fields.append(("source-app-id", "1111111111")) }
                    fields.append(fine ? ("conversion-value", String(Int(random.next() % 64)))
                                       : ("coarse-conversion-value", ["\"low\"", "\"medium\"", "\"high\""][Int(random.next() % 3)]))
                    let body = skadnetwork(fields)
                    let time = at(min(day + [2, 7, 35][window], days - 1))
                    out.append(Delivery(time: time, path: skadnetworkPath, body: body))
                    // A device that did not get the first 200 in time sends it again.
                    if random.next() % 9 == 0 { out.append(Delivery(time: time.adding(milliseconds: 3_600_000), path: skadnetworkPath, body: body)) }
                }
                // AdAttributionKit: installs and re-engagements from the other network.
                if random.next() % 2 == 0 {
                    let reengagement = random.next() % 3 == 0
                    let payload = #"{"impression-type":"app-impression","ad-network-identifier":"demo.adattributionkit","source-identifier":"\#(reengagement ? "1234" : "5678")","advertised-item-identifier":\#(appID),"conversion-type":"\#(reengagement ? "re-engagement" : "download")","postback-identifier":"\#(uuid(100_000 + n))","did-win":true,"postback-sequence-index":0,"marketplace-identifier":"com.apple.AppStore"}"#
                    let value = random.next() % 2 == 0 ? #","conversion-value":\#(random.next() % 64)"# : #","coarse-conversion-value":"medium""#
                    let interaction = reengagement || random.next() % 3 != 0 ? "click" : "view"
                    let body = #"{"jws-string":"\#(jws(payload))","ad-interaction-type":"\#(interaction)"\#(value),"country-code":"DE"}"#
                    let time = at(min(day + 2, days - 1))
                    out.append(Delivery(time: time, path: adattributionkitPath, body: body))
                    if random.next() % 9 == 0 { out.append(Delivery(time: time.adding(milliseconds: 7_200_000), path: adattributionkitPath, body: body)) }
                }
            }
        }
        // One of each earlier SKAdNetwork version, as older devices send them.
        let legacy: [(String, [(String, String)])] = [
            ("3.0", [("version", #""3.0""#), ("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                     ("transaction-id", "\"\(uuid(900_001))\""), ("redownload", "false"), ("fidelity-type", "1"), ("did-win", "true"), ("conversion-value", "31")]),
            ("2.2", [("version", #""2.2""#), ("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                     ("transaction-id", "\"\(uuid(900_002))\""), ("redownload", "false"), ("source-app-id", "1111111111"), ("fidelity-type", "1"), ("conversion-value", "3")]),
            ("2.1", [("version", #""2.1""#), ("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                     ("transaction-id", "\"\(uuid(900_003))\""), ("redownload", "true")]),
            ("2.0", [("version", #""2.0""#), ("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                     ("transaction-id", "\"\(uuid(900_004))\""), ("redownload", "false")]),
            ("1.0", [("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                     ("transaction-id", "\"\(uuid(900_005))\"")]),
        ]
        for (k, (_, fields)) in legacy.enumerated() {
            out.append(Delivery(time: at(4 + k), path: skadnetworkPath, body: skadnetwork(fields)))
        }
        // A postback whose campaign was changed after Apple signed it: quarantined, signature invalid.
        var tampered = skadnetwork([("version", #""3.0""#), ("ad-network-id", #""demo-ads.skadnetwork""#), ("campaign-id", "12"), ("app-id", String(appID)),
                                    ("transaction-id", "\"\(uuid(900_006))\""), ("redownload", "false"), ("fidelity-type", "1"), ("did-win", "true")])
        tampered = tampered.replacingOccurrences(of: #""campaign-id":12"#, with: #""campaign-id":13"#)
        out.append(Delivery(time: at(9), path: skadnetworkPath, body: tampered))
        // Apple's documented development postback (Developer settings): kept, and quarantined
        // as development_postback since the demo runs without --dev.
        out.append(Delivery(time: at(11), path: adattributionkitPath, body: appleDevelopmentPostback))
        return out.filter { $0.time <= end }
    }

    /// An SKAdNetwork body from raw JSON members, signed with the demo key over its version's fields.
    static func skadnetwork(_ fields: [(String, String)]) -> String {
        let unsigned = "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + ",\"attribution-signature\":\"\"}"
        guard case .success(let postback) = SKAdNetworkPostback.read(try! JSONParser().parse(Array(unsigned.utf8))) else { return unsigned }
        // 1.0 and 2.0 were signed with P-192; these bytes stand for such a signature, which no
        // library here can check.
        let signature = postback.isCheckable ? key.derSignature(for: postback.signedMessage) : Array("P-192 signature".utf8)
        return unsigned.replacingOccurrences(of: #""attribution-signature":"""#,
                                             with: #""attribution-signature":"\#(Data(signature).base64EncodedString())""#)
    }

    static func jws(_ payload: String) -> String {
        let input = base64URL(Array(#"{"kid":"\#(keyName)","alg":"ES256"}"#.utf8)) + "." + base64URL(Array(payload.utf8))
        return input + "." + base64URL(key.rawSignature(for: Array(input.utf8)))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func uuid(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return "d3m0" + String(repeating: "0", count: 4) + "-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }

    static let appleDevelopmentPostback = #"{"jws-string":"eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ","conversion-value":24,"ad-interaction-type":"click","country-code":"US"}"#
}
