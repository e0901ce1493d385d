import Marketers
import AppDevelopers
import Foundation
import Postbacks
import Primitives
import Relays
import SiteOwners

extension EndpointConfiguration {
    /// Every option, in the order `--help` lists them. Adding one is adding a line here (and its
    /// property): the flag, the file's key, the range and the help come from it alone.
    static var options: [EndpointOption] {
        [
            .text("--host", "host", \.host, placeholder: "ADDRESS",
                  "Numeric address to listen on (use 0.0.0.0 or :: behind a reverse proxy on another host)."),
            .integer("--port", "port", \.port, 0...65535, "TCP port (0 picks a free port and prints it)."),
            .text("--data", "data", \.dataDirectory, placeholder: "DIR", "Data directory: report log, admin token."),
            .text("--node", "node", \.node, placeholder: "NAME",
                  "This node's name, where several run behind one front: shown in /healthz and /metrics. 1 to 64 letters, digits, '.', '_' or '-'. The default is this machine's host name.",
                  check: { configuration in
                      EndpointConfiguration.isNodeName(configuration.node)
                          ? nil : "\"\(configuration.node.prefix(80))\" is not 1 to 64 letters, digits, '.', '_' or '-'"
                  }),
            .list("--site", "sites", \.sites, placeholder: "DOMAIN",
                  "A registrable domain this endpoint serves, e.g. news.example. Repeat for each site. Required unless --dev.",
                  check: { configuration in
                      let rules = SiteRules(developmentMode: configuration.developmentMode)
                      return configuration.sites.lazy.compactMap { site in rules.check(site).map { "\(site): \($0.detail)" } }.first
                  }).restart("the served sites key the trigger ledger, the token keys and the arrivals, all built at start"),
            EndpointOption(flag: "--config", key: nil, placeholder: "FILE",
                           help: "JSON file with any of the options' keys, and the registrations \"conversions\", \"campaigns\", \"apps\", \"ad_networks\", \"apple_ads_campaigns\", \"advertisers\" and \"relays\" (arrays of the objects the admin API takes), added at start if missing. Flags given on the command line override the file. On SIGHUP (systemctl reload) the file is read again: the registrations and the token file apply at once, other changes wait for a restart, which the \"reload\" event names; a file that is refused changes nothing."),
            .list("--trusted-proxy", "trusted_proxies", \.trustedProxies, placeholder: "ADDR",
                  "A proxy (IP or CIDR, e.g. 127.0.0.1 or 10.0.0.0/8) whose X-Forwarded-Host names the site a report was sent to. Repeatable. From any other peer only Host is used.",
                  check: { configuration in
                      configuration.trustedProxies.first { AddressRange($0) == nil }.map { "\($0): not an IP address or CIDR block" }
                  }),
            .optionalText("--token", nil, \.adminToken, placeholder: "TOKEN",
                          "Bearer token for /api/* and /metrics. Every user of the machine can read it in the process list: prefer --token-file or the environment variable \(environmentTokenName). If none is set, one is generated on first start and kept in DATA/admin-token (0600).").live(),
            .optionalText("--token-file", "token_file", \.adminTokenFile, placeholder: "FILE",
                          "A file whose first line is the bearer token (refused unless only its owner can read it, as ssh refuses a key). Read again on a reload (SIGHUP): a new token there replaces the old one at once.").live(),
            .toggle("--dev", "dev", \.developmentMode,
                    "Development mode: accept localhost and IP-literal sites (as WebKit's tests and Safari's Debug Mode use), allow running without --site (taking the report's role from its body), count reports sent sooner than 24 h (Debug Mode) as accepted debug reports instead of quarantining them, and accept AdAttributionKit postbacks signed with Apple's development keys."),
            .pairs("--postback-key", "postback_keys", placeholder: "NAME=KEY",
                   "Also trust this P-256 key (base64 DER SubjectPublicKeyInfo) for postback signatures: for tests, demos and an ad network's test setup. What it signs is exported as signature \"test_key\", never as Apple's. Repeatable.",
                   get: { $0.postbackKeys.map { ($0.name, $0.subjectPublicKeyInfo) } },
                   set: { configuration, pairs in configuration.postbackKeys = pairs.map { (name: $0.0, subjectPublicKeyInfo: $0.1) } },
                   check: { configuration in
                       do { _ = try PostbackKeyring(testKeys: configuration.postbackKeys) } catch {
                           return "\(error) (a P-256 key as base64 DER SubjectPublicKeyInfo)"
                       }
                       return nil
                   }),
            .pairs("--token-public-key", "token_public_keys", placeholder: "SITE=KEY",
                   "The PCM token key of a site this endpoint does not serve (base64url DER SubjectPublicKeyInfo, as its get-token-public-key answers), to verify that site's tokens in reports. Each served site's own key is made on first start and kept in DATA/token-keys.json (0600). Repeatable.",
                   get: { $0.tokenPublicKeys.map { ($0.site, $0.subjectPublicKeyInfo) } },
                   set: { configuration, pairs in configuration.tokenPublicKeys = pairs.map { (site: $0.0, subjectPublicKeyInfo: $0.1) } },
                   check: { configuration in
                       do { _ = try configuration.resolvedTokenPublicKeys() } catch { return "\(error)" }
                       return nil
                   }),
            .toggle("--require-tokens", "require_tokens", \.requireTokens,
                    "Quarantine PCM reports without a token pair (token_missing): for sites that put attributionsourcenonce on every link."),
            .toggle("--cluster", "cluster", \.cluster,
                    "This node is one of several behind one front (deploy/nginx/cluster.conf): registrations come only from --config, token keys only from --token-keys and viewer tokens only from --viewer-tokens, the same files on every node, and the admin API refuses to change them (409 registrations_are_shared). The admin token must be given (--token-file or the environment), the same on every node. A served site without a key in the file stops the start."),
            .optionalText("--viewer-tokens", "viewer_tokens", \.viewerTokens, placeholder: "FILE",
                          "The viewer tokens' file (SHA-256 hashes only, 0600), which `attribution-endpoint viewer-token` writes; a change in it counts from the next request. Default DATA/viewer-tokens.json. With --cluster it is required: the one file every node has, so that a token works on whichever node the front chooses.")
                .restart("the file's path is read at start; what it holds is read again at every change"),
            .integer("--token-key-rotation-days", "token_key_rotation_days", \.tokenKeyRotationDays, 30...3650,
                     "Replace each served site's PCM token key N days after it began to be served; the successor is made a day ahead, and the old key verifies what it signed for nine more days. Each rotation loses the reports of clicks made before it and sent after it (the browser re-fetches the key), so choose months. Not with --cluster. Default: by hand only (POST /api/token-keys)."),
            .optionalText("--token-keys", "token_keys", \.tokenKeys, placeholder: "FILE",
                          "The served sites' PCM token keys (0600). Default DATA/token-keys.json, where a missing key is made on first start. With --cluster, the one file every node has, made with `attribution-endpoint token-keys add`."),
            .optionalText("--clickhouse", "clickhouse", \.clickhouse, placeholder: "URL",
                          "Export every record to ClickHouse at http://HOST:PORT/DATABASE (its HTTP interface), from a cursor kept in DATA; the tables are created if missing (deploy/clickhouse/schema.sql). The user and password come from --clickhouse-credentials or CLICKHOUSE_USER and CLICKHOUSE_PASSWORD, never from the URL.",
                          check: { configuration in
                              do { _ = try configuration.resolvedClickHouse() } catch { return "\(error)" }
                              return nil
                          }),
            .optionalText("--clickhouse-credentials", "clickhouse_credentials", \.clickhouseCredentialsFile, placeholder: "FILE",
                          "A file whose first line is user:password for ClickHouse (keep it 0600)."),
            .text("--apple-ads-api", "apple_ads_api", \.appleAdsAPI, placeholder: "URL",
                  "Apple's attribution API, called with each Apple Ads token an app posts.",
                  check: { configuration in
                      guard let url = URL(string: configuration.appleAdsAPI), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                          return "\(configuration.appleAdsAPI): not an http(s) URL"
                      }
                      return nil
                  }),
            .number("--apple-ads-timeout", "apple_ads_timeout", \.appleAdsTimeout, 1.5...300,
                    "Time to wait for Apple's answer: Apple holds a 404 for about a second before answering it."),
            .optionalText("--apple-ads-platform", "apple_ads_platform", \.appleAdsPlatformFile, placeholder: "FILE",
                          "A JSON file (keep it 0600) with the Apple Ads Platform API's client_id, team_id, key_id, ad_account_id and private_key_file (a PEM file): the names of the Apple Ads campaigns, ad groups and keywords seen are then looked up in the background, daily, and cached in DATA. Names typed in win.",
                          check: { configuration in
                              guard let file = configuration.appleAdsPlatformFile else { return nil }
                              do { _ = try AppleAdsPlatformCredentials.load(file: file) } catch { return "\(error)" }
                              return nil
                          }),
            .text("--apple-ads-platform-api", "apple_ads_platform_api", \.appleAdsPlatformAPI, placeholder: "URL",
                  "The Apple Ads Platform API (a stand-in for tests).",
                  check: { configuration in Self.httpsURL(configuration.appleAdsPlatformAPI) }),
            .text("--apple-ads-platform-token-url", "apple_ads_platform_token_url", \.appleAdsPlatformTokenURL, placeholder: "URL",
                  "Apple's OAuth token endpoint for it (a stand-in for tests).",
                  check: { configuration in Self.httpsURL(configuration.appleAdsPlatformTokenURL) }),
            .number("--apple-ads-platform-pace", "apple_ads_platform_pace", \.appleAdsPlatformPace, 0.01...60,
                    "Seconds between two requests to the Apple Ads Platform API; a 429 is waited out besides."),
            .number("--relay-timeout", "relay_timeout", \.relayTimeout, 1...300,
                    "Seconds a relay waits for a destination's whole answer before trying the copy again later (whole seconds)."),
            .integer("--relay-connections", "relay_connections", \.relayConnections, 1...16,
                     "Copies in flight at once to one relay destination, each on a connection of its own; after a failure, one, doubling back with each window taken whole."),
            .number("--relay-dead-after-days", "relay_dead_after_days", \.relayDeadAfterDays, 1...90,
                    "Days a relay destination may fail (no copy taken) before it is marked dead: it is then not tried until an admin resumes it (POST /api/relays/resume), from where it stopped."),
            .toggle("--relay-allow-http", "relay_allow_http", \.relayAllowHTTP,
                    "Let relay destinations be plain http:// beyond loopback: copies then travel readable and changeable, signature header included. Only for a collector on a network you trust."),
            .integer("--apple-ads-max-pending", "apple_ads_max_pending", \.appleAdsMaxPending, 1...10_000_000,
                     "Apple Ads tokens that may wait for Apple's final answer at once; past it a new token is answered 503 apple_ads_backlogged with Retry-After, and the app posts it again later."),
            .toggle("--manual-clock", "manual_clock", \.manualClock,
                    "The clock stands still; POST /admin/clock {\"now\": RFC3339} (token) sets it. For tests and demos that walk through days."),
            .integer("--late-cutoff-days", "late_cutoff_days", \.lateCutoffDays, 3...3650,
                     "Reports more than N days after their trigger are quarantined as too_late."),
            .integer("--max-connections", "max_connections", \.maxConnections, 1...1_000_000,
                     "Concurrent connections before new ones get 503."),
            .number("--request-timeout", "request_timeout", \.requestTimeout, 0.1...3600,
                    "Time to receive a whole request once it starts."),
            .number("--idle-timeout", "idle_timeout", \.idleTimeout, 0.1...86_400, "Keep-alive connections idle this long are closed."),
            .integer("--max-report-bytes", "max_report_bytes", \.maxReportBytes, 256...EndpointConfiguration.largestBody,
                     "Largest report body accepted (at most 96 KiB: a log record holds 128 KiB with what is kept beside the body)."),
            .integer("--max-postback-bytes", "max_postback_bytes", \.maxPostbackBytes, 1024...EndpointConfiguration.largestBody,
                     "Largest postback body accepted (at most 96 KiB, as reports)."),
            .integer("--signature-threads", "signature_threads", \.signatureThreads, 0...256,
                     "Threads checking postback signatures beside the event loop (default: one per core the process may use, but the loop's; 0 checks them on the loop, at most 1 ms of each turn that also stores reports)."),
            .integer("--log-preallocation-mb", "log_preallocation_mb", \.logPreallocationMB, 0...1024,
                     "Zeros kept written ahead of the log's end, so that a flush does not grow the file (0 for none)."),
            .integer("--log-segment-mb", "log_segment_mb", \.logSegmentMB, 1...65_536,
                     "The log is kept in segments (DATA/reports.log, then DATA/log/): one is sealed at this size and at the first record of each UTC day."),
            .integer("--postback-window-days", "postback_window_days", \.postbackWindowDays, 10...365,
                     "Keep a postback's duplicate key in memory this many days (devices retry for up to 9); after that its sealed segment's key table (DATA/postback-keys/) finds a late copy, and memory holds only the window."),
            .integer("--retention-days", "retention_days", \.retentionDays, 10...36_500,
                     "Remove whole sealed log segments whose last record is more than N days old, once the summary's checkpoint covers them, their postbacks' key tables are written (--postback-window-days) and, with --clickhouse, once they are exported. Their records leave /api/reports and the other exports; the summary keeps counting them. Must be more than --late-cutoff-days. Default: keep everything."),
            .number("--summary-checkpoint-interval", "summary_checkpoint_interval", \.summaryCheckpointInterval, 0.1...86_400,
                    "How often the summary's aggregates are saved while reports arrive: after a crash, only the reports since are read again. A stop always saves them."),
            .toggle("--no-access-log", "access_log", \.accessLog, setTo: false,
                    "Do not write one JSON line per request to stderr."),
            .optionalText("--public", "public", \.publicDirectory, placeholder: "DIR",
                          "The summary page's folder, served at /. By default it is found beside the binary: PREFIX/share/attribution-endpoint/Public for an installed binary in PREFIX/bin, the checkout's Public/ for a build folder, or ./Public. Without one the endpoint refuses to start and names the folders it searched."),
            .toggle("--no-page", "page", \.servePage, setTo: false, "Run without the summary page (/ answers 404)."),
            .registrations("conversions", \.conversions, "Conversions, as POST /api/conversions takes them.") { configuration, json in
                configuration.conversions.append(try RegistryInput.conversion(from: json))
            },
            .registrations("campaigns", \.campaigns, "Campaigns, as POST /api/campaigns takes them.") { configuration, json in
                configuration.campaigns.append(try RegistryInput.campaign(from: json))
            },
            .registrations("apps", \.apps, "Apps, as POST /api/apps takes them; the file's version replaces the registered one at start.") { configuration, json in
                configuration.apps.append(try AppRegistryInput.app(from: json))
            },
            .registrations("ad_networks", \.adNetworks, "Ad networks, as POST /api/ad-networks takes them.") { configuration, json in
                configuration.adNetworks.append(try AppRegistryInput.adNetwork(from: json))
            },
            .registrations("apple_ads_campaigns", \.appleAdsCampaigns, "Apple Ads campaigns' names, as POST /api/apple-ads/campaigns takes them.") { configuration, json in
                configuration.appleAdsCampaigns.append(try AppRegistryInput.appleAdsCampaign(from: json))
            },
            .registrations("relays", \.relays, "Relay destinations, as POST /api/relays takes them; the file's version replaces the registered one at start.") { configuration, json in
                configuration.relays.append(try RelayDestinationInput.destination(from: json))
            },
            .registrations("advertisers", \.advertisers, "Advertisers and the sites each owns, as POST /api/advertisers takes them; the file's version replaces the registered one at start.") { configuration, json in
                configuration.advertisers.append(try AdvertiserInput.advertiser(from: json))
            },
        ]
    }

    /// Why `text` is no https URL (plain http only to this machine: a stand-in), or nil. The
    /// client secret and the bearer token never cross a network in clear.
    static func httpsURL(_ text: String) -> String? {
        guard let url = URL(string: text), let host = url.host, ["http", "https"].contains(url.scheme ?? "") else {
            return "\(text): not an https URL"
        }
        if url.scheme == "http" && !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) {
            return "\(text): plain http only to this machine (a stand-in); Apple's API is https"
        }
        return nil
    }
}
