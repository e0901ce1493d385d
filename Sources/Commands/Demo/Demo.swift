import Primitives
import SiteOwners
import Endpoint
import Foundation
import RawHTTPClient
import AppleAdsStandIn

/// `attribution-endpoint demo`: the product in one command. It starts the endpoint with a demo
/// publisher (news.example), an app developer (app.example) and an advertiser (shop.example) on a
/// manual clock, registers their campaigns and conversions, and drives three weeks of traffic
/// through the real HTTP paths: pixel hits, two reports per attribution with independent 24–48 h
/// delays, a few late ones, some invalid ones and a Debug Mode report, fraud-prevention tokens
/// signed through the endpoint's own paths with forged, replayed and unverifiable ones among them
/// (`DemoTokens`), the app developer's postback copies (`DemoPostbacks`), and the app developer's
/// server jobs (`DemoAppServerJobs`): Apple Ads tokens answered by a stand-in for Apple's API that
/// runs inside the demo, conversion-value questions and an Info.plist check. Then it keeps
/// serving so the summary page can be opened.
public enum Demo {
    public static let sites = ["news.example", "app.example", "shop.example"]
    static let start = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!
    static let days = 21

    static let conversions = [
        #"{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}"#,
        #"{"site":"shop.example","name":"signup","trigger_data":2,"priority":10}"#,
        #"{"site":"shop.example","name":"add_to_cart","trigger_data":1,"priority":5}"#,
    ]
    static let campaigns = [
        #"{"source_site":"news.example","source_id":42,"destination":"shop.example","name":"Winter sale","starts_at":"2026-11-01T00:00:00Z","ends_at":"2026-11-30T00:00:00Z"}"#,
        #"{"source_site":"news.example","source_id":7,"destination":"shop.example","name":"Gift guide","starts_at":"2026-11-01T00:00:00Z"}"#,
        #"{"source_site":"news.example","source_id":13,"destination":"shop.example","name":"Black Friday","starts_at":"2026-11-20T00:00:00Z","ends_at":"2026-11-30T00:00:00Z"}"#,
        #"{"source_site":"app.example","source_id":200,"destination":"shop.example","name":"In-app banner","starts_at":"2026-11-01T00:00:00Z"}"#,
    ]

    /// One thing that happens at a moment of the demo's clock.
    enum Event {
        case pixel(host: String, query: String)
        case report(host: String, body: String, contentType: String, tokens: DemoTokens.Plan? = nil)
        case postback(path: String, body: String)
        case appleAdsToken(String)
        case conversionValue(String)
    }

    /// The demo's traffic, in time order, from a fixed seed: the same every run.
    static func traffic(seed: UInt64 = 2026) -> [(time: Timestamp, event: Event)] {
        var random = SplitMix64(seed: seed)
        var events: [(Timestamp, Event)] = []
        let hour = TimingModel.hour
        func body(_ source: String, _ id: Int, _ data: Int) -> String {
            #"{"source_engagement_type":"click","source_site":"\#(source)","source_id":\#(id),"attributed_on_site":"shop.example","trigger_data":\#(data),"version":3}"#
        }
        var clicks = 0
        func reports(_ source: String, _ id: Int, _ data: Int, trigger: Int64, late: Bool, tokens: DemoTokens.Plan? = nil) {
            // Two copies, each after its own delay of 24 h + U(0, 24 h), as the browser draws them.
            for host in [source, "shop.example"] {
                var delay = 24 * hour + Int64(random.next() % UInt64(24 * hour))
                if late && host == "shop.example" { delay += Int64(2 + random.next() % 4) * 24 * hour }
                events.append((Timestamp(millisecondsSinceEpoch: trigger + delay),
                               .report(host: host, body: body(source, id, data), contentType: "application/json", tokens: tokens)))
            }
        }
        for day in 0..<days {
            let conversionsToday = 6 + Int(random.next() % 9) + (day >= 19 ? 8 : 0)
            for _ in 0..<conversionsToday {
                let trigger = start.millisecondsSinceEpoch + Int64(day) * 24 * hour + Int64(random.next() % UInt64(24 * hour))
                let fromApp = random.next() % 7 == 0
                let source = fromApp ? "app.example" : "news.example"
                let ids = fromApp ? [200] : (day >= 19 ? [42, 7, 13, 13] : [42, 42, 7])
                let id = ids[Int(random.next() % UInt64(ids.count))]
                let pick = random.next() % 10
                let (name, data) = pick < 3 ? ("purchase", 5) : pick < 7 ? ("signup", 2) : ("add_to_cart", 1)
                let time = Timestamp(millisecondsSinceEpoch: trigger)
                events.append((time, .pixel(host: "shop.example", query: "conversion=\(name)&source=https://\(source)")))
                // The publisher puts a nonce on one link in four, the advertiser on one redirect in
                // three of those (counted, not drawn, so the rest of the traffic stays the same).
                clicks += 1
                let tokens = source == "news.example" && clicks % 4 == 0
                    ? DemoTokens.Plan(click: clicks, kind: .genuine, destination: clicks % 12 == 0) : nil
                reports(source, id, data, trigger: trigger, late: random.next() % 25 == 0, tokens: tokens)
            }
        }
        // A Debug Mode report from Safari's Web Inspector: 10 s and 20 s after its trigger.
        let debugTrigger = start.millisecondsSinceEpoch + 10 * 24 * hour + 12 * hour
        events.append((Timestamp(millisecondsSinceEpoch: debugTrigger), .pixel(host: "shop.example", query: "conversion=purchase&source=https://news.example")))
        events.append((Timestamp(millisecondsSinceEpoch: debugTrigger + 10_000), .report(host: "shop.example", body: body("news.example", 42, 5), contentType: "application/json")))
        events.append((Timestamp(millisecondsSinceEpoch: debugTrigger + 20_000), .report(host: "news.example", body: body("news.example", 42, 5), contentType: "application/json")))
        // A partner publisher that runs its own endpoint: its click converts here, and the
        // destination copy carries its token, which this endpoint has no key to check.
        for (k, day) in [4, 9, 15].enumerated() {
            let trigger = start.millisecondsSinceEpoch + Int64(day) * 24 * hour + 15 * hour
            events.append((Timestamp(millisecondsSinceEpoch: trigger), .pixel(host: "shop.example", query: "conversion=purchase&source=https://partner.example")))
            events.append((Timestamp(millisecondsSinceEpoch: trigger + 30 * hour),
                           .report(host: "shop.example", body: body("partner.example", 3, 5), contentType: "application/json",
                                   tokens: DemoTokens.Plan(click: -1 - k, kind: .unknownSite))))
        }
        // Forgers: made-up tokens under the publisher's name.
        for day in [6, 13] {
            events.append((Timestamp(millisecondsSinceEpoch: start.millisecondsSinceEpoch + Int64(day) * 24 * hour + 20 * hour),
                           .report(host: "shop.example", body: body("news.example", 42, 5), contentType: "application/json",
                                   tokens: DemoTokens.Plan(click: -10 - day, kind: .forged))))
        }
        // Reports that cannot be true or are not reports at all.
        for (k, (host, text, type)) in [
            ("news.example", body("news.example", 99, 5), "application/json"),       // an id the publisher never used
            ("shop.example", body("news.example", 42, 9), "application/json"),       // no trigger with that trigger data
            ("news.example", body("news.example", 300, 5), "application/json"),      // source_id is 8 bits
            ("shop.example", body("news.example", 42, 16), "application/json"),      // trigger_data is 4 bits
            ("shop.example", body("news.example", 42, 5), "text/plain"),             // not JSON
            ("shop.example", #"{"source_engagement_type":"click","source_site":"www.news.example","source_id":1,"attributed_on_site":"shop.example","trigger_data":1,"version":3}"#, "application/json"),
        ].enumerated() {
            let time = Timestamp(millisecondsSinceEpoch: start.millisecondsSinceEpoch + Int64(3 + 3 * k) * 24 * hour + 9 * hour)
            events.append((time, .report(host: host, body: text, contentType: type)))
        }
        return events.filter { $0.0 <= end }.sorted { $0.0 < $1.0 }
    }

    /// The clock at the end of the demo: reports drawn for later are still "in the browser".
    static var end: Timestamp { start.adding(milliseconds: Int64(days) * TimingModel.day + 12 * TimingModel.hour) }

    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var configuration = EndpointConfiguration()
        configuration.sites = sites
        configuration.manualClock = true
        configuration.accessLog = false
        configuration.dataDirectory = NSTemporaryDirectory() + "attribution-demo-" + String(UInt32.random(in: .min ... .max), radix: 16)
        configuration.adminToken = environment[EndpointConfiguration.environmentTokenName]
        configuration.postbackKeys = [(DemoPostbacks.keyName, DemoPostbacks.keySPKI)]
        var keepServing = true
        var i = 0
        func value() -> String? { i += 1; return i < arguments.count ? arguments[i] : nil }
        while i < arguments.count {
            switch arguments[i] {
            case "--port": configuration.port = value().flatMap(UInt16.init) ?? configuration.port
            case "--host": configuration.host = value() ?? configuration.host
            case "--data": configuration.dataDirectory = value() ?? configuration.dataDirectory
            case "--token": configuration.adminToken = value()
            case "--public": configuration.publicDirectory = value() ?? configuration.publicDirectory
            case "--exit": keepServing = false
            case "--help", "-h":
                print("""
                attribution-endpoint demo: starts the endpoint with demo sites on a manual clock, drives three weeks of
                traffic through it, prints the address and token of the summary page, and keeps serving.

                USAGE: attribution-endpoint demo [--port N] [--host ADDRESS] [--data DIR] [--token TOKEN] [--public DIR] [--exit]
                  --data DIR   where to keep the demo's data (default: a new temporary directory)
                  --exit       stop after the traffic instead of serving the page
                """)
                return 0
            default:
                FileHandle.standardError.write(Data("attribution-endpoint demo: unknown option '\(arguments[i])' (see demo --help)\n".utf8))
                return 64
            }
            i += 1
        }
        let server: EndpointServer
        let port: UInt16
        let appleAds: AppleAdsStandIn
        do {
            appleAds = try AppleAdsStandIn()
            for token in DemoAppServerJobs.appleAdsTokens(start: start, days: days, end: end) { appleAds.script(token.token, token.steps) }
            configuration.appleAdsAPI = appleAds.url
            server = try EndpointServer(configuration: configuration)
            port = try server.start()
            // A first start makes each site's RSA-4096 token key, seconds each; the demo's Safari
            // would otherwise wait for them on its first signatures.
            server.waitUntilTokenKeysAreMade()
            try drive(port: port, token: server.adminToken, settle: { server.waitUntilAppleAdsSettled() })
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint demo: \(error)\n".utf8))
            return 1
        }
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        print("""

        Demo ready: three weeks of reports for news.example (publisher), app.example (app developer) and
        shop.example (advertiser), with the clock at \(end.rfc3339).

          Open   http://\(host):\(port)/
          Token  \(server.adminToken)

        Data in \(configuration.dataDirectory). Press Ctrl-C to stop.
        """)
        fflush(nil)  // a script reading the address through a pipe gets it now
        guard keepServing else {
            server.shutdown()
            server.waitUntilStopped()
            appleAds.stop()
            return 0
        }
        defer { appleAds.stop() }
        return EndpointCommand.serveUntilSignalled(server)
    }

    /// Registers the demo sites' campaigns and conversions, then plays the traffic, moving the
    /// manual clock to each event's moment.
    /// `settle` waits until the Apple Ads calls due at the clock's time are made.
    static func drive(port: UInt16, token: String, settle: () -> Void = {}) throws {
        let admin = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
        // Over loopback, through the same sockets and parser a browser's requests meet.
        func send(_ method: String, _ path: String, host: String, headers: [(String, String)] = [], body: String = "") throws -> RawResponse {
            try httpRequest(port: port, method: method, path: path, host: host, headers: headers, body: Array(body.utf8))
        }
        func expect(_ response: RawResponse, _ statuses: ClosedRange<Int>, _ what: String) throws {
            guard statuses.contains(response.status) else {
                throw RawHTTPError("\(what) answered \(response.status): \(response.bodyText)")
            }
        }
        func setClock(_ time: Timestamp) throws {
            try expect(send("POST", "/admin/clock", host: "localhost", headers: admin, body: #"{"now":"\#(time.rfc3339)"}"#), 200...200, "the clock")
            settle()
        }
        try setClock(start)
        for c in conversions { try expect(send("POST", "/api/conversions", host: "localhost", headers: admin, body: c), 201...201, "a conversion") }
        for c in campaigns { try expect(send("POST", "/api/campaigns", host: "localhost", headers: admin, body: c), 201...201, "a campaign") }
        try expect(send("POST", "/api/apps", host: "localhost", headers: admin, body: DemoPostbacks.app), 201...201, "the app")
        try expect(send("POST", "/api/apps", host: "localhost", headers: admin, body: DemoPostbacks.liteApp), 201...201, "the second app")
        for a in DemoAppServerJobs.advertisers {
            try expect(send("POST", "/api/advertisers", host: "localhost", headers: admin, body: a), 201...201, "an advertiser")
        }
        for n in DemoPostbacks.adNetworks { try expect(send("POST", "/api/ad-networks", host: "localhost", headers: admin, body: n), 201...201, "an ad network") }
        for c in DemoAppServerJobs.appleAdsCampaigns {
            try expect(send("POST", "/api/apple-ads/campaigns", host: "localhost", headers: admin, body: c), 201...201, "an Apple Ads campaign")
        }
        var counts = (pixels: 0, reports: 0, refused: 0, postbacks: 0, appleAds: 0, conversionValues: 0)
        // Each attribution's tokens, signed when its first report is sent (standing in for the
        // click and the conversion, when Safari asks for them); both copies carry the same.
        var signed: [Int: (source: DemoTokens.Pair?, destination: DemoTokens.Pair?)] = [:]
        func tokens(for plan: DemoTokens.Plan) throws -> (source: DemoTokens.Pair?, destination: DemoTokens.Pair?) {
            if let pairs = signed[plan.click] { return pairs }
            let pairs: (source: DemoTokens.Pair?, destination: DemoTokens.Pair?)
            switch plan.kind {
            case .genuine:
                pairs = (try DemoTokens.sign(site: "news.example", side: "source", port: port),
                         plan.destination ? try DemoTokens.sign(site: "shop.example", side: "destination", port: port) : nil)
            case .forged, .unknownSite:
                pairs = (DemoTokens.madeUp(), nil)
            }
            signed[plan.click] = pairs
            return pairs
        }
        // Destination copies a replayer captured, sent again at the end.
        var replays: [String] = []
        var events = traffic().map { (time: $0.time, event: $0.event) }
        for delivery in DemoPostbacks.traffic(start: start, days: days, end: end) {
            events.append((delivery.time, .postback(path: delivery.path, body: delivery.body)))
        }
        for token in DemoAppServerJobs.appleAdsTokens(start: start, days: days, end: end) {
            events.append((token.time, .appleAdsToken(token.token)))
        }
        // Installs asking which conversion value to set, from an hour to five weeks after launch.
        for n in 0..<40 {
            let time = start.adding(milliseconds: Int64(n) * 12 * TimingModel.hour + 3 * TimingModel.hour)
            let launch = Timestamp(millisecondsSinceEpoch: max(start.millisecondsSinceEpoch, time.millisecondsSinceEpoch - Int64(1 + n * 37 % 500) * TimingModel.hour))
            events.append((time, .conversionValue(DemoAppServerJobs.conversionValueQuestion(appID: DemoPostbacks.appID, firstLaunch: launch, n: n))))
        }
        for (time, event) in events.sorted(by: { $0.time < $1.time }) {
            try setClock(time)
            switch event {
            case .pixel(let host, let query):
                // The browser follows the pixel's redirect to the trigger URL on the same host.
                let redirect = try send("GET", "/conversion-pixel?" + query, host: host)
                try expect(redirect, 302...302, "the pixel")
                guard let location = redirect.header("Location"), let url = URL(string: location) else {
                    throw RawHTTPError("the pixel gave no Location")
                }
                try expect(send("GET", url.path + (url.query.map { "?" + $0 } ?? ""), host: host), 200...200, "the trigger")
                counts.pixels += 1
            case .report(let host, var body, let type, let plan):
                if let plan {
                    let pairs = try tokens(for: plan)
                    body = DemoTokens.add(source: pairs.source, destination: pairs.destination, to: body)
                    if plan.kind == .genuine, host == "shop.example", replays.count < 2, plan.click % 8 == 0 { replays.append(body) }
                }
                let response = try send("POST", "/.well-known/private-click-measurement/report-attribution/", host: host,
                                               headers: [("Content-Type", type)], body: body)
                if response.status == 201 { counts.reports += 1 } else { counts.refused += 1 }
            case .postback(let path, let body):
                // As a device sends it: no Content-Type, the app's site as Host.
                try expect(send("POST", path, host: "app.example", body: body), 200...200, "a postback")
                counts.postbacks += 1
            case .appleAdsToken(let token):
                // As the app's own code sends it: the token as text, to the app's site.
                try expect(send("POST", "/apple-ads/attribution", host: "app.example", headers: [("Content-Type", "text/plain")], body: token),
                           202...202, "an Apple Ads token")
                counts.appleAds += 1
            case .conversionValue(let body):
                try expect(send("POST", "/conversion-value", host: "app.example", headers: [("Content-Type", "application/json")], body: body),
                           200...200, "a conversion-value question")
                counts.conversionValues += 1
            }
        }
        for body in replays {
            _ = try send("POST", "/.well-known/private-click-measurement/report-attribution/", host: "shop.example",
                         headers: [("Content-Type", "application/json")], body: body)
            counts.reports += 1
        }
        try setClock(end)
        func findings(_ plist: String) throws -> String {
            let check = try send("POST", "/api/plist-check", host: "localhost", headers: admin, body: plist)
            try expect(check, 200...200, "the Info.plist check")
            return (try? JSONParser().parse(check.body)).flatMap { json -> String? in
                guard case .object(let members) = json else { return nil }
                let count = { (key: String, one: String) -> String in
                    guard case .number(let n)? = members.first(where: { $0.key == key })?.value, let n = Int(n) else { return "? \(one)s" }
                    return counted(n, one)
                }
                return "\(count("errors", "error")) and \(count("warnings", "warning"))"
            } ?? "?"
        }
        let main = try findings(DemoAppServerJobs.infoPlist), lite = try findings(DemoAppServerJobs.liteInfoPlist)
        let arrivals = try send("GET", "/api/arrivals", host: "localhost", headers: admin)
        let silent = (try? JSONParser().parse(arrivals.body)).flatMap { json -> String? in
            guard case .object(let members) = json, case .number(let n)? = members.first(where: { $0.key == "silent" })?.value,
                  let n = Int(n) else { return nil }
            return n == 1 ? "1 site or app has" : "\(n) sites or apps have"
        } ?? "? sites or apps have"
        print("Sent \(counted(counts.pixels, "pixel hit")), \(counted(counts.reports + counts.refused, "report")) (\(counts.refused) refused as invalid), \(counted(counts.postbacks, "postback copy", plural: "postback copies")), \(counted(counts.appleAds, "Apple Ads token")) and \(counted(counts.conversionValues, "conversion-value question")); the Info.plist check found \(main) in the demo app's and \(lite) in Demo Puzzle Lite's, whose copies never arrive; \(silent) received nothing for 48 hours (/api/arrivals).")
    }
}

/// A small, seedable generator, so the demo's traffic is the same every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
