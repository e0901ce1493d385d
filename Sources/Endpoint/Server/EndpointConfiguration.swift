import Signatures
import PCM
import Primitives
import SiteOwners
import AppDevelopers
import Foundation
import Postbacks

/// Everything the endpoint can be told, from flags, a JSON config file and the environment.
public struct EndpointConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 8080
    public var dataDirectory = "./data"
    /// Registrable domains this endpoint receives reports for.
    public var sites: [String] = []
    /// Accept `localhost` and IP-literal sites, and run without `--site`.
    public var developmentMode = false
    /// Peers whose `X-Forwarded-Host` is believed: addresses or CIDR blocks.
    public var trustedProxies: [String] = []
    /// Bearer token for `/api/*` and `/metrics`; generated and stored when nil.
    public var adminToken: String?
    public var maxConnections = 4096
    public var requestTimeout: Double = 10
    public var idleTimeout: Double = 30
    /// Reports are well under 4 KB even with both tokens; anything past this is refused with 413.
    public var maxReportBytes = 8192
    /// Postback copies are a few hundred bytes to 2 KB; anything past this is refused with 413.
    public var maxPostbackBytes = 16384
    /// Extra P-256 keys trusted for postback signatures (`--postback-key NAME=BASE64-SPKI`): for
    /// tests, demos and an ad network's test setup. What they sign is labelled `test_key`.
    public var postbackKeys: [(name: String, subjectPublicKeyInfo: String)] = []
    /// Threads that check postback signatures off the event loop; nil: one for each core the
    /// process may use besides the loop's. 0 checks them on the loop, a bounded share per turn.
    public var signatureThreads: Int?
    /// Public token keys of sites whose keys this endpoint does not hold (`--token-public-key
    /// SITE=BASE64URL-SPKI`), to verify their tokens in reports: a destination endpoint receives
    /// the source site's token too.
    public var tokenPublicKeys: [(site: String, subjectPublicKeyInfo: String)] = []
    /// Quarantine PCM reports that carry no token pair (`token_missing`): for sites that put a
    /// nonce on every link.
    public var requireTokens = false
    public var accessLog = true
    /// The summary page's files, served at `/`; nil: found by `PageLocator` beside the binary.
    public var publicDirectory: String?
    /// `--no-page`: run without the summary page on purpose.
    public var servePage = true
    /// `POST /admin/clock` sets the time, which stands still until set again.
    public var manualClock = false
    /// Reports arriving more than this many days after their trigger are quarantined `too_late`.
    public var lateCutoffDays = 30
    /// Megabytes of zeros kept written ahead of the log's end, so that each flush overwrites
    /// blocks already on disk instead of growing the file (0: none).
    public var logPreallocationMB = 4
    /// Seconds between the summary's checkpoints while reports arrive: what a crash costs in
    /// rebuilding at the next start (a stop always writes one).
    public var summaryCheckpointInterval: Double = 60
    /// Apple's attribution API, which the Apple Ads outbox calls with each token.
    public var appleAdsAPI = "https://api-adservices.apple.com/api/v1/"
    /// Seconds to wait for Apple's answer: above the ~1 s for which Apple holds a 404.
    public var appleAdsTimeout: Double = 10
    /// Apple Ads tokens that may wait for Apple's final answer at once; past it a new one is
    /// answered 503 `apple_ads_backlogged`. At a million installs a day that is hours of an
    /// outage of Apple's API; each waiting token takes about 2 KB (docs/DEPLOYMENT.md).
    public var appleAdsMaxPending = 100_000
    /// Registrations from the config file, added at start unless already there.
    public var conversions: [Conversion] = []
    public var campaigns: [Campaign] = []
    /// App developers' registrations from the config file; the file's version of an app or ad
    /// network replaces the registered one at start.
    public var apps: [App] = []
    public var adNetworks: [AdNetwork] = []
    /// Apple Ads campaigns' names from the config file, as `apple_ads_campaigns`.
    public var appleAdsCampaigns: [AppleAdsCampaign] = []

    public init() {}

    /// The timing model this configuration asks for; development mode counts Debug Mode reports.
    public var timingModel: TimingModel {
        TimingModel(cutoff: Int64(lateCutoffDays) * TimingModel.day, acceptDebugReports: developmentMode)
    }

    public static let environmentTokenName = "ATTRIBUTION_ENDPOINT_TOKEN"

    public static let helpText = """
    attribution-endpoint: receives Private Click Measurement (Web AdAttributionKit) reports and
    copies of SKAdNetwork and AdAttributionKit postbacks, validates them, checks their
    signatures, stores them durably and exports them; for app developers it also answers
    conversion values, asks Apple which Apple Ads campaign brought an install, and checks
    Info.plist files.

    USAGE: attribution-endpoint [options]
           attribution-endpoint demo [--port N] [--exit]   (a demo on a manual clock; see demo --help)
           attribution-endpoint check-plist Info.plist [--site S]... [--config F] [--json]
           attribution-endpoint rotate-token-key SITE [--at RFC3339]   (see rotate-token-key --help)

    OPTIONS
      --host ADDRESS           Numeric address to listen on (default 127.0.0.1; use 0.0.0.0 or ::
                               behind a reverse proxy on another host).
      --port N                 TCP port (default 8080; 0 picks a free port and prints it).
      --data DIR               Data directory: report log, admin token (default ./data).
      --site DOMAIN            A registrable domain this endpoint serves, e.g. news.example.
                               Repeat for each site. Required unless --dev.
      --config FILE            JSON file with any of: "host", "port", "data", "sites" (array),
                               "trusted_proxies" (array), "dev" (bool), "max_connections",
                               "request_timeout", "idle_timeout", "max_report_bytes",
                               "max_postback_bytes", "postback_keys" (object: name → key),
                               "signature_threads", "token_public_keys" (object: site → key),
                               "require_tokens" (bool), "apple_ads_api", "apple_ads_timeout",
                               "apple_ads_max_pending",
                               "late_cutoff_days", "log_preallocation_mb",
                               "summary_checkpoint_interval", "manual_clock" (bool), "public",
                               "page" (bool, false as --no-page), and the
                               registrations "conversions", "campaigns", "apps",
                               "ad_networks" and "apple_ads_campaigns" (arrays of the objects
                               the admin API takes), added at start if missing.
                               Flags given on the command line override the file.
      --trusted-proxy ADDR     A proxy (IP or CIDR, e.g. 127.0.0.1 or 10.0.0.0/8) whose
                               X-Forwarded-Host names the site a report was sent to.
                               Repeatable. From any other peer only Host is used.
      --token TOKEN            Bearer token for /api/* and /metrics. Also read from the
                               environment variable \(environmentTokenName). If neither is set,
                               one is generated on first start and kept in DATA/admin-token (0600).
      --dev                    Development mode: accept localhost and IP-literal sites (as
                               WebKit's tests and Safari's Debug Mode use), allow running
                               without --site (taking the report's role from its body), and
                               count reports sent sooner than 24 h (Debug Mode) as accepted
                               debug reports instead of quarantining them, and accept
                               AdAttributionKit postbacks signed with Apple's development keys.
      --postback-key NAME=KEY  Also trust this P-256 key (base64 DER SubjectPublicKeyInfo) for
                               postback signatures: for tests, demos and an ad network's test
                               setup. What it signs is exported as signature "test_key", never
                               as Apple's. Repeatable.
      --token-public-key SITE=KEY
                               The PCM token key of a site this endpoint does not serve
                               (base64url DER SubjectPublicKeyInfo, as its
                               get-token-public-key answers), to verify that site's tokens in
                               reports. Each served site's own key is made on first start and
                               kept in DATA/token-keys.json (0600). Repeatable.
      --require-tokens         Quarantine PCM reports without a token pair (token_missing):
                               for sites that put attributionsourcenonce on every link.
      --apple-ads-api URL      Apple's attribution API, called with each Apple Ads token an
                               app posts (default https://api-adservices.apple.com/api/v1/).
      --apple-ads-timeout SECS Time to wait for Apple's answer (default 10; Apple holds a
                               404 for about a second before answering it).
      --apple-ads-max-pending N
                               Apple Ads tokens that may wait for Apple's final answer at
                               once (default 100000); past it a new token is answered 503
                               apple_ads_backlogged with Retry-After, and the app posts it
                               again later.
      --manual-clock           The clock stands still; POST /admin/clock {"now": RFC3339}
                               (token) sets it. For tests and demos that walk through days.
      --late-cutoff-days N     Reports more than N days after their trigger are quarantined
                               as too_late (default 30).
      --max-connections N      Concurrent connections before new ones get 503 (default 4096).
      --request-timeout SECS   Time to receive a whole request once it starts (default 10).
      --idle-timeout SECS      Keep-alive connections idle this long are closed (default 30).
      --max-report-bytes N     Largest report body accepted (default 8192).
      --max-postback-bytes N   Largest postback body accepted (default 16384).
      --signature-threads N    Threads checking postback signatures beside the event loop
                               (default: one per core the process may use, but the loop's; 0
                               checks them on the loop, at most 1 ms of each turn that also
                               stores reports).
      --log-preallocation-mb N Zeros kept written ahead of the log's end, so that a flush
                               does not grow the file (default 4; 0 for none).
      --summary-checkpoint-interval SECS
                               How often the summary's aggregates are saved while reports
                               arrive (default 60): after a crash, only the reports since are
                               read again. A stop always saves them.
      --no-access-log          Do not write one JSON line per request to stderr.
      --public DIR             The summary page's folder, served at /. By default it is found
                               beside the binary: PREFIX/share/attribution-endpoint/Public for
                               an installed binary in PREFIX/bin, the checkout's Public/ for a
                               build folder, or ./Public. Without one the endpoint refuses to
                               start and names the folders it searched.
      --no-page                Run without the summary page (/ answers 404).
      --help                   Show this help.

    ENDPOINTS
      POST /.well-known/private-click-measurement/report-attribution/   reports (browsers)
      POST /.well-known/skadnetwork/report-attribution/                 postback copies (devices)
      POST /.well-known/appattribution/report-attribution/              postback copies (devices)
      GET  /healthz                                                     200 while accepting reports
      GET  /api/reports[?since=RFC3339][&until=RFC3339]                 NDJSON export (token)
      GET  /api/postbacks[?since=RFC3339][&until=RFC3339]               NDJSON export (token)
      GET  /api/rejections                                              refused requests (token)
      GET  /metrics                                                     Prometheus text (token)
      GET|POST /api/conversions, DELETE /api/conversions?site=&name=    conversions (token)
      GET|POST /api/campaigns, DELETE /api/campaigns?source_site=&name= campaigns (token)
      GET|POST /api/apps, DELETE /api/apps?app_id=                      apps and schemas (token)
      GET|POST /api/ad-networks, DELETE /api/ad-networks?id=            ad networks (token)
      GET  /conversion-pixel?conversion=NAME[&source=https://SITE][&site=DOMAIN]
                                                                        302 to the trigger URL
      GET  /.well-known/private-click-measurement/trigger-attribution/DD[/PP]
                                                                        records a trigger, 1x1 GIF
      POST /admin/clock                                                 sets a --manual-clock (token)
    """

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    public enum Parsed {
        case run(EndpointConfiguration)
        case help
    }

    /// Reads flags (and the file named by `--config`) over the defaults.
    public static func parse(arguments: [String], environment: [String: String]) throws -> Parsed {
        // The config file goes first so that flags override it, wherever --config stands.
        var configuration = EndpointConfiguration()
        if let i = arguments.firstIndex(of: "--config") {
            guard i + 1 < arguments.count else { throw ParseError(description: "--config needs a file path") }
            try configuration.apply(configFile: arguments[i + 1])
        }
        var sitesFromFlags: [String] = []
        var proxiesFromFlags: [String] = []
        var keysFromFlags: [(name: String, subjectPublicKeyInfo: String)] = []
        var tokenKeysFromFlags: [(site: String, subjectPublicKeyInfo: String)] = []
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw ParseError(description: "\(flag) needs a value") }
            return arguments[i]
        }
        func number<T: LosslessStringConvertible>(_ flag: String, _ type: T.Type) throws -> T {
            let text = try value(flag)
            guard let n = T(text) else { throw ParseError(description: "\(flag): '\(text)' is not a valid number") }
            return n
        }
        while i < arguments.count {
            let flag = arguments[i]
            switch flag {
            case "--help", "-h": return .help
            case "--host": configuration.host = try value(flag)
            case "--port": configuration.port = try number(flag, UInt16.self)
            case "--data": configuration.dataDirectory = try value(flag)
            case "--site": sitesFromFlags.append(try value(flag))
            case "--config": _ = try value(flag)
            case "--trusted-proxy": proxiesFromFlags.append(try value(flag))
            case "--token": configuration.adminToken = try value(flag)
            case "--dev": configuration.developmentMode = true
            case "--max-connections": configuration.maxConnections = try number(flag, Int.self)
            case "--request-timeout": configuration.requestTimeout = try number(flag, Double.self)
            case "--idle-timeout": configuration.idleTimeout = try number(flag, Double.self)
            case "--max-report-bytes": configuration.maxReportBytes = try number(flag, Int.self)
            case "--max-postback-bytes": configuration.maxPostbackBytes = try number(flag, Int.self)
            case "--signature-threads": configuration.signatureThreads = try number(flag, Int.self)
            case "--postback-key":
                let text = try value(flag)
                guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                    throw ParseError(description: "--postback-key needs NAME=BASE64-SPKI")
                }
                keysFromFlags.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
            case "--token-public-key":
                let text = try value(flag)
                guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                    throw ParseError(description: "--token-public-key needs SITE=BASE64URL-SPKI")
                }
                tokenKeysFromFlags.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
            case "--require-tokens": configuration.requireTokens = true
            case "--apple-ads-api": configuration.appleAdsAPI = try value(flag)
            case "--apple-ads-timeout": configuration.appleAdsTimeout = try number(flag, Double.self)
            case "--apple-ads-max-pending": configuration.appleAdsMaxPending = try number(flag, Int.self)
            case "--no-access-log": configuration.accessLog = false
            case "--public": configuration.publicDirectory = try value(flag)
            case "--no-page": configuration.servePage = false
            case "--manual-clock": configuration.manualClock = true
            case "--late-cutoff-days": configuration.lateCutoffDays = try number(flag, Int.self)
            case "--log-preallocation-mb": configuration.logPreallocationMB = try number(flag, Int.self)
            case "--summary-checkpoint-interval": configuration.summaryCheckpointInterval = try number(flag, Double.self)
            default: throw ParseError(description: "unknown option '\(flag)' (see --help)")
            }
            i += 1
        }
        if !sitesFromFlags.isEmpty { configuration.sites = sitesFromFlags }
        if !proxiesFromFlags.isEmpty { configuration.trustedProxies = proxiesFromFlags }
        if !keysFromFlags.isEmpty { configuration.postbackKeys = keysFromFlags }
        if !tokenKeysFromFlags.isEmpty { configuration.tokenPublicKeys = tokenKeysFromFlags }
        if configuration.adminToken == nil, let token = environment[environmentTokenName], !token.isEmpty {
            configuration.adminToken = token
        }
        try configuration.check()
        return .run(configuration)
    }

    mutating func apply(configFile path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ParseError(description: "cannot read config file \(path)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ParseError(description: "config file \(path) is not a JSON object")
        }
        for (key, value) in object {
            func bad() -> ParseError { ParseError(description: "config file \(path): \"\(key)\" has the wrong type") }
            switch key {
            case "host": guard let v = value as? String else { throw bad() }; host = v
            case "port": guard let v = value as? Int, let p = UInt16(exactly: v) else { throw bad() }; port = p
            case "data": guard let v = value as? String else { throw bad() }; dataDirectory = v
            case "sites": guard let v = value as? [String] else { throw bad() }; sites = v
            case "trusted_proxies": guard let v = value as? [String] else { throw bad() }; trustedProxies = v
            case "dev": guard let v = value as? Bool else { throw bad() }; developmentMode = v
            case "max_connections": guard let v = value as? Int else { throw bad() }; maxConnections = v
            case "request_timeout": guard let v = value as? Double else { throw bad() }; requestTimeout = v
            case "idle_timeout": guard let v = value as? Double else { throw bad() }; idleTimeout = v
            case "max_report_bytes": guard let v = value as? Int else { throw bad() }; maxReportBytes = v
            case "max_postback_bytes": guard let v = value as? Int else { throw bad() }; maxPostbackBytes = v
            case "signature_threads": guard let v = value as? Int else { throw bad() }; signatureThreads = v
            case "postback_keys":
                guard let v = value as? [String: String] else { throw bad() }
                postbackKeys = v.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            case "require_tokens": guard let v = value as? Bool else { throw bad() }; requireTokens = v
            case "apple_ads_api": guard let v = value as? String else { throw bad() }; appleAdsAPI = v
            case "apple_ads_timeout": guard let v = value as? Double else { throw bad() }; appleAdsTimeout = v
            case "apple_ads_max_pending": guard let v = value as? Int else { throw bad() }; appleAdsMaxPending = v
            case "token_public_keys":
                guard let v = value as? [String: String] else { throw bad() }
                tokenPublicKeys = v.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            case "late_cutoff_days": guard let v = value as? Int else { throw bad() }; lateCutoffDays = v
            case "log_preallocation_mb": guard let v = value as? Int else { throw bad() }; logPreallocationMB = v
            case "summary_checkpoint_interval": guard let v = value as? Double else { throw bad() }; summaryCheckpointInterval = v
            case "manual_clock": guard let v = value as? Bool else { throw bad() }; manualClock = v
            case "public": guard let v = value as? String else { throw bad() }; publicDirectory = v
            case "page": guard let v = value as? Bool else { throw bad() }; servePage = v
            case "apps", "ad_networks", "apple_ads_campaigns":
                guard let list = value as? [Any] else { throw bad() }
                for (n, item) in list.enumerated() {
                    do {
                        // Foundation traps, rather than throws, on serializing anything but an object or array.
                        guard item is [String: Any] else { throw ParseError(description: "not an object") }
                        let json = try JSONParser().parse(Array(try JSONSerialization.data(withJSONObject: item)))
                        switch key {
                        case "apps": apps.append(try AppRegistryInput.app(from: json))
                        case "ad_networks": adNetworks.append(try AppRegistryInput.adNetwork(from: json))
                        default: appleAdsCampaigns.append(try AppRegistryInput.appleAdsCampaign(from: json))
                        }
                    } catch let problem as RequestProblem {
                        throw ParseError(description: "config file \(path): \(key)[\(n)]: \(problem.detail)")
                    } catch {
                        throw ParseError(description: "config file \(path): \(key)[\(n)] is not a JSON object")
                    }
                }
            case "conversions", "campaigns":
                guard let list = value as? [Any] else { throw bad() }
                for (n, item) in list.enumerated() {
                    do {
                        // Foundation traps, rather than throws, on serializing anything but an object or array.
                        guard item is [String: Any] else { throw ParseError(description: "not an object") }
                        let json = try JSONParser().parse(Array(try JSONSerialization.data(withJSONObject: item)))
                        if key == "conversions" {
                            conversions.append(try RegistryInput.conversion(from: json))
                        } else {
                            campaigns.append(try RegistryInput.campaign(from: json))
                        }
                    } catch let problem as RequestProblem {
                        throw ParseError(description: "config file \(path): \(key)[\(n)]: \(problem.detail)")
                    } catch {
                        throw ParseError(description: "config file \(path): \(key)[\(n)] is not a JSON object")
                    }
                }
            default: throw ParseError(description: "config file \(path): unknown key \"\(key)\"")
            }
        }
    }

    /// The page's folder to serve, or nil with `--no-page`. A folder named with `--public` must
    /// hold the page; otherwise `PageLocator` looks beside the binary. A page that cannot be found
    /// stops the start: the marketers' whole product must not vanish with the working directory.
    public func resolvedPublicDirectory() throws -> String? {
        guard servePage else { return nil }
        guard let publicDirectory else { return try PageLocator.locate() }
        guard PageLocator.holdsPage(publicDirectory) else {
            throw ParseError(description: "--public \(publicDirectory): no index.html there (--no-page runs without the page)")
        }
        return publicDirectory
    }

    /// `tokenPublicKeys` read, or the reason one cannot be.
    public func resolvedTokenPublicKeys() throws -> [String: TokenPublicKey] {
        var keys: [String: TokenPublicKey] = [:]
        let rules = SiteRules(developmentMode: developmentMode)
        for (site, text) in tokenPublicKeys {
            if let violation = rules.check(site) { throw ParseError(description: "--token-public-key \(site): \(violation.detail)") }
            guard let der = Base64.decode(text, urlSafe: true) ?? Base64.decode(text, urlSafe: false) else {
                throw ParseError(description: "--token-public-key \(site): the key is not base64url")
            }
            do {
                keys[site] = try TokenPublicKey(subjectPublicKeyInfo: der)
            } catch {
                throw ParseError(description: "--token-public-key \(site): \(error) (an RSA key as base64url DER SubjectPublicKeyInfo)")
            }
        }
        return keys
    }

    /// Refuses configurations that would silently lose reports.
    public func check() throws {
        if sites.isEmpty && !developmentMode {
            throw ParseError(description: "no site configured: pass --site DOMAIN for each registrable domain served (or --dev)")
        }
        let rules = SiteRules(developmentMode: developmentMode)
        for site in sites {
            if let violation = rules.check(site) {
                throw ParseError(description: "--site \(site): \(violation.detail)")
            }
        }
        for proxy in trustedProxies where AddressRange(proxy) == nil {
            throw ParseError(description: "--trusted-proxy \(proxy): not an IP address or CIDR block")
        }
        do {
            _ = try PostbackKeyring(testKeys: postbackKeys)
        } catch {
            throw ParseError(description: "--postback-key: \(error) (a P-256 key as base64 DER SubjectPublicKeyInfo)")
        }
        _ = try resolvedTokenPublicKeys()
        guard let url = URL(string: appleAdsAPI), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ParseError(description: "--apple-ads-api \(appleAdsAPI): not an http(s) URL")
        }
        guard (1.5...300).contains(appleAdsTimeout) else {
            throw ParseError(description: "--apple-ads-timeout must be 1.5 to 300 seconds: Apple holds a 404 for about a second")
        }
        guard (1...10_000_000).contains(appleAdsMaxPending) else {
            throw ParseError(description: "--apple-ads-max-pending must be 1 to 10000000")
        }
        if let threads = signatureThreads, !(0...256).contains(threads) {
            throw ParseError(description: "--signature-threads must be 0 to 256")
        }
        if !(1...1_000_000).contains(maxConnections) || !(256...1 << 20).contains(maxReportBytes) || !(1024...1 << 20).contains(maxPostbackBytes)
            || !(0.1...3600).contains(requestTimeout) || !(0.1...86_400).contains(idleTimeout) || !(3...3650).contains(lateCutoffDays)
            || !(0...1024).contains(logPreallocationMB) || !(0.1...86_400).contains(summaryCheckpointInterval) {
            throw ParseError(description: "limits out of range (--max-connections 1 to 1000000, --max-report-bytes 256 to 1048576, --max-postback-bytes 1024 to 1048576, --request-timeout 0.1 to 3600, --idle-timeout 0.1 to 86400, --late-cutoff-days 3 to 3650, --log-preallocation-mb 0 to 1024, --summary-checkpoint-interval 0.1 to 86400)")
        }
    }
}
