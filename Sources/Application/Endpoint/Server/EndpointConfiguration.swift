import ClickHouseExport
import DurableFiles
import Signatures
import Primitives
import Relays
import SiteOwners
import AppDevelopers
import Marketers
import Foundation


/// Everything the endpoint can be told, from flags, a JSON config file and the environment.
public struct EndpointConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// This node's name, where several run behind one front: in `/healthz`, `/metrics` and the
    /// `listening` event. The machine's host name unless set.
    public var node = EndpointConfiguration.hostName()
    public var port: UInt16 = 8080
    public var dataDirectory = "./data"
    /// The file `--config` named, read at start and at each reload.
    public var configFile: String?
    /// Registrable domains this endpoint receives reports for.
    public var sites: [String] = []
    /// Accept `localhost` and IP-literal sites, and run without `--site`.
    public var developmentMode = false
    /// Peers whose `X-Forwarded-Host` is believed: addresses or CIDR blocks.
    public var trustedProxies: [String] = []
    /// Bearer token for `/api/*` and `/metrics`; generated and stored when nil.
    public var adminToken: String?
    /// A file holding it (0600), so that it is not in the process list.
    public var adminTokenFile: String?
    /// It was given as `--token`: the process list shows it to every user of the machine.
    public var adminTokenOnCommandLine = false
    public var maxConnections = 4096
    public var requestTimeout: Double = 10
    public var idleTimeout: Double = 30
    /// Reports are well under 4 KB even with both tokens; anything past this is refused with 413.
    public var maxReportBytes = 8192
    /// Postback copies are a few hundred bytes to 2 KB; anything past this is refused with 413.
    public var maxPostbackBytes = 16384
    /// The largest body either option takes: a log record's payload is at most 128 KiB
    /// (`LogRecord.maxPayload`), and a stored report or postback keeps its verdict, reasons and
    /// site beside the body. A larger body would be acknowledged, then read back as corrupt.
    public static let largestBody = 96 << 10
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
    /// Megabytes of records in one log segment; a segment is also sealed at each new UTC day.
    public var logSegmentMB = 256
    /// Days a postback's duplicate key stays in the ledger's memory (`PostbackWindow`).
    public var postbackWindowDays = PostbackWindow.defaultDays
    /// Remove whole log segments whose last record is older than this many days; nil keeps everything.
    public var retentionDays: Int?
    /// Replace each served site's PCM token key this many days after it began to be served; nil: by hand only.
    public var tokenKeyRotationDays: Int?
    /// Seconds between the summary's checkpoints while reports arrive: what a crash costs in
    /// rebuilding at the next start (a stop always writes one).
    public var summaryCheckpointInterval: Double = 60
    /// Apple's attribution API, which the Apple Ads outbox calls with each token.
    /// One node of several behind one front: registrations only from the config file, token keys
    /// only from `tokenKeys`, both the same on every node; the admin API changes neither.
    public var cluster = false
    /// `--viewer-tokens`: the viewer tokens' file, DATA/viewer-tokens.json unless named.
    public var viewerTokens: String?
    /// The served sites' PCM token keys; nil for DATA/token-keys.json.
    public var tokenKeys: String?
    /// `http://HOST:PORT/DATABASE`: export every record there (nil: the node keeps its log to itself).
    public var clickhouse: String?
    /// A file holding `user:password` for ClickHouse.
    public var clickhouseCredentialsFile: String?
    /// `CLICKHOUSE_USER` and `CLICKHOUSE_PASSWORD`, as the environment had them at start.
    public var clickhouseEnvironment: [String: String] = [:]
    public var appleAdsAPI = "https://api-adservices.apple.com/api/v1/"
    /// Seconds to wait for Apple's answer: above the ~1 s for which Apple holds a 404.
    public var appleAdsTimeout: Double = 10
    /// The Apple Ads Platform API's client (`AppleAdsPlatformCredentials`): names for the ids
    /// Apple's answers carry. Nil: no lookups.
    public var appleAdsPlatformFile: String?
    public var appleAdsPlatformAPI = "https://api.ads.apple.com/v1/"
    public var appleAdsPlatformTokenURL = "https://appleid.apple.com/auth/oauth2/token"
    /// Seconds between two requests to it.
    public var appleAdsPlatformPace: Double = 1
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
    /// Advertisers and their sites, as `advertisers`.
    public var advertisers: [Advertiser] = []
    /// Relay destinations, as `relays`; the file's version replaces the registered one at start.
    public var relays: [RelayDestination] = []
    /// Seconds a relay waits for a destination's whole answer (whole seconds: Foundation on
    /// Linux drops a fraction).
    public var relayTimeout: Double = 10
    /// Copies in flight at once to one relay destination.
    public var relayConnections = 8
    /// Days a relay destination may fail before it is marked dead.
    public var relayDeadAfterDays: Double = 3
    /// Lets a relay destination be plain `http://` beyond loopback.
    public var relayAllowHTTP = false

    public init() {}

    /// The timing model this configuration asks for; development mode counts Debug Mode reports.
    public var timingModel: TimingModel {
        TimingModel(cutoff: Int64(lateCutoffDays) * TimingModel.day, acceptDebugReports: developmentMode)
    }

    public static let environmentTokenName = "ATTRIBUTION_ENDPOINT_TOKEN"

    /// The machine's host name, as a node's name may hold it (`localhost` if it cannot).
    static func hostName() -> String {
        let name = ProcessInfo.processInfo.hostName
        return isNodeName(name) ? name : "localhost"
    }

    /// 1 to 64 of letters, digits, `.`, `_` and `-`: a name that goes into JSON, Prometheus labels
    /// and the access log's neighbours as it is, with nothing to escape.
    static func isNodeName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// `--help`: the usage, every option from `options`, and the paths.
    public static var helpText: String {
        usage + "\n\nOPTIONS\n" + options.filter { $0.flag != nil }.map(\.helpLines).joined(separator: "\n")
            + "\n  --help" + String(repeating: " ", count: 19) + "Show this help.\n\nCONFIG FILE ONLY\n"
            + options.filter { $0.flag == nil }.map(\.helpLines).joined(separator: "\n") + "\n\n" + endpoints
    }

    /// The endpoint's own options that a command also takes, as `--help` shows them: one
    /// declaration (`options`) gives every command's help, so none can name a key the file refuses.
    static func sharedOptionsHelp(_ flags: [String]) -> String {
        "\n\nOPTIONS, AS THE ENDPOINT TAKES THEM\n" + flags.compactMap { flag in
            options.first { $0.flag == flag }?.helpLines
        }.joined(separator: "\n")
    }

    static let usage = """
    attribution-endpoint: receives Private Click Measurement (Web AdAttributionKit) reports and
    copies of SKAdNetwork and AdAttributionKit postbacks, validates them, checks their
    signatures, stores them durably and exports them; for app developers it also answers
    conversion values, asks Apple which Apple Ads campaign brought an install, and checks
    Info.plist files.

    USAGE: attribution-endpoint [options]
           attribution-endpoint demo [--port N] [--exit]   (a demo on a manual clock; see demo --help)
           attribution-endpoint check-plist Info.plist [--site S]... [--config F] [--json]
           attribution-endpoint send-samples URL [--host H]   (Apple's sample postbacks, to a development URL)
           attribution-endpoint rotate-token-key SITE [--at RFC3339]   (see rotate-token-key --help)
           attribution-endpoint viewer-token add|list|revoke …   (read-only tokens; see viewer-token --help)
           attribution-endpoint token-keys add|list …   (a cluster's shared PCM token keys; see token-keys --help)
           attribution-endpoint clickhouse schema|queries|rows …   (the export's tables and queries; see clickhouse --help)
           attribution-endpoint backup DEST [--data DIR]   (a consistent copy of a running node; see backup --help)
           attribution-endpoint restore BACKUP [--data DIR]   (a backup made the data directory; see restore --help)

    Every option but --config, --token and --help may also be given in the JSON file that
    --config names, under the key shown with it; flags on the command line override the file.
    A key the endpoint does not know, a value of the wrong type or out of range is refused,
    naming the option.
    """

    static let endpoints = """
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
      GET|POST /api/advertisers, DELETE /api/advertisers?id=            advertisers and their sites (token)
      GET  /api/arrivals                                                when each site and app last received (token)
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
        let byFlag = Dictionary(options.compactMap { option in option.flag.map { ($0, option) } }, uniquingKeysWith: { a, _ in a })
        // The config file goes first so that flags override it, wherever --config stands.
        var configuration = EndpointConfiguration()
        if let i = arguments.firstIndex(of: "--config") {
            guard i + 1 < arguments.count else { throw ParseError(description: "--config needs a file path") }
            try configuration.apply(configFile: arguments[i + 1])
        }
        var seen: Set<String> = []
        var i = 0
        while i < arguments.count {
            let flag = arguments[i]
            if flag == "--help" || flag == "-h" { return .help }
            guard let option = byFlag[flag] else { throw ParseError(description: "unknown option '\(flag)' (see --help)") }
            var value: String?
            if option.placeholder != nil {
                i += 1
                guard i < arguments.count else { throw ParseError(description: "\(flag) needs a value") }
                value = arguments[i]
            }
            if let refusal = option.fromArgument(&configuration, value, seen.insert(flag).inserted) {
                throw ParseError(description: "\(flag): \(refusal)")
            }
            i += 1
        }
        configuration.clickhouseEnvironment = environment.filter { $0.key == "CLICKHOUSE_USER" || $0.key == "CLICKHOUSE_PASSWORD" }
        configuration.adminTokenOnCommandLine = configuration.adminToken != nil
        if configuration.adminToken == nil, let file = configuration.adminTokenFile {
            do throws(PrivateFileError) {
                let token = try PrivateFiles.readSecret(file, what: "the token file").trimmingCharacters(in: .whitespacesAndNewlines)
                guard !token.isEmpty else { throw PrivateFileError("the token file \(file) is empty") }
                configuration.adminToken = token
            } catch {
                throw ParseError(description: "--token-file: \(error.description)")
            }
        }
        if configuration.adminToken == nil, let token = environment[environmentTokenName], !token.isEmpty {
            configuration.adminToken = token
        }
        try configuration.check()
        return .run(configuration)
    }

    mutating func apply(configFile path: String) throws {
        configFile = path
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ParseError(description: "cannot read config file \(path)")
        }
        // The endpoint's own strict parser first: Foundation's keeps the last of a key given twice,
        // so a file naming a value twice would silently take one.
        if case .failure(let failure) = Result(catching: { () throws(JSONParser.Failure) in try JSONParser().parse(Array(data)) }) {
            throw ParseError(description: "config file \(path) is not valid JSON: \(failure.description)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ParseError(description: "config file \(path) is not a JSON object")
        }
        let byKey = Dictionary(Self.options.compactMap { option in option.key.map { ($0, option) } }, uniquingKeysWith: { a, _ in a })
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            guard let option = byKey[key] else { throw ParseError(description: "config file \(path): unknown key \"\(key)\"") }
            if let refusal = option.fromFile(&self, value) {
                throw ParseError(description: "config file \(path): \"\(key)\" \(refusal)")
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

    /// Refuses configurations that would silently lose reports: each option's own check (its
    /// range, or what its value must be), then what needs several.
    var viewerTokensPath: String { viewerTokens ?? dataDirectory + "/" + ViewerTokenStore.fileName }

    var tokenKeysPath: String { tokenKeys ?? dataDirectory + "/" + TokenKeyStore.fileName }

    /// The ClickHouse to export to, with its credentials; nil without `--clickhouse`.
    public func resolvedClickHouse() throws -> ClickHouseTarget? {
        guard let clickhouse else { return nil }
        let credentials = try ClickHouseTarget.Credentials.resolve(file: clickhouseCredentialsFile, environment: clickhouseEnvironment)
        return try ClickHouseTarget(clickhouse, credentials: credentials)
    }

    /// Devices retry a postback for up to nine days (PROTOCOLS.md §3): the log keeps at least that.
    static let minimumRetentionDays = 10

    public func check() throws {
        for option in Self.options {
            if let refusal = option.check(self) { throw ParseError(description: "\(option.name): \(refusal)") }
        }
        if let retentionDays, retentionDays <= lateCutoffDays || retentionDays < Self.minimumRetentionDays {
            throw ParseError(description: "--retention-days: \(retentionDays) is too short: keep at least \(Self.minimumRetentionDays) days (devices retry postbacks for up to 9) and more than --late-cutoff-days (\(lateCutoffDays)), whose triggers a start rebuilds from the log")
        }
        if tokenKeyRotationDays != nil && cluster {
            throw ParseError(description: "--token-key-rotation-days: in a cluster every node must serve the same key, so successors are scheduled in the shared file: `attribution-endpoint token-keys add SITE --file FILE --serves-from TIME` (docs/DEPLOYMENT.md)")
        }
        // One admin token and one set of viewer tokens for every node: the front may send the
        // page's next request to any of them, and a token one node made is refused by the rest.
        if cluster && adminToken == nil {
            throw ParseError(description: "--cluster: every node needs the same admin token: give it with --token-file FILE (\"token_file\"), the same file on every node, or \(Self.environmentTokenName); a node must not make one of its own")
        }
        if cluster && viewerTokens == nil {
            throw ParseError(description: "--cluster: every node needs the same viewer tokens: name the shared file with --viewer-tokens FILE (\"viewer_tokens\"), made with `attribution-endpoint viewer-token add --viewer-tokens FILE` and given to every node")
        }
        if sites.isEmpty && !developmentMode {
            throw ParseError(description: "no site configured: pass --site DOMAIN for each registrable domain served (or --dev)")
        }
    }
}
