// swift-tools-version:6.1
import PackageDescription

// Foundation, Dispatch and the C library, and one package: apple/swift-crypto, for signatures,
// imported by the `Signatures` target alone (docs/THIRD_PARTY.md).
let package = Package(
    name: "attribution-endpoint",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "attribution-endpoint", targets: ["attribution-endpoint"]),
        // For the benchmark tools in benchmarks/, which write logs through the real store.
        .library(name: "ReportStore", targets: ["ReportStore", "PCMRecords"]),
        // For the postback benchmark: the keyring and the rules, as the endpoint uses them.
        .library(name: "Postbacks", targets: ["Postbacks"]),
        // For the log generator: Apple Ads tokens and calls as records.
        .library(name: "AppleAdsRecords", targets: ["AppleAdsRecords"]),
        // For the token benchmark: the library's own sign and verify rates.
        .library(name: "Signatures", targets: ["Signatures"]),
        // For the conversion-value benchmark: the counters' reader and the answer, without HTTP.
        .library(name: "AppDevelopers", targets: ["AppDevelopers"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // A generic HTTP/1.1 server on non-blocking POSIX sockets. Knows nothing about attribution.
        .target(name: "HTTPServer", dependencies: ["CSystemShims", "Locking"],
                swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
        // A pthread-mutex-guarded value that ThreadSanitizer can see through.
        .target(name: "Locking", dependencies: ["CSystemShims"]),
        // What Swift cannot reach: epoll's header, naming a thread, the CPU's CRC-32C instruction.
        .target(name: "CSystemShims"),
        // Pure value types, no locks, no I/O but the list read once, no HTTP: a rule says what failed.
        // The primitives every protocol uses: JSON, base64url, time, sites and the Public Suffix List.
        .target(name: "Primitives", resources: [.copy("Resources/public_suffix_list.dat"), .copy("Resources/public_suffix_list.NOTICE.txt")]),
        // Private Click Measurement's wire rules: reports, roles, the trigger path.
        .target(name: "PCM", dependencies: ["Primitives"]),
        // SKAdNetwork's postback rules: fields, versions, the signed message, the duplicate key.
        .target(name: "SKAdNetwork", dependencies: ["Primitives"]),
        // AdAttributionKit's postback rules: the compact JWS, its payload, Apple's key ids.
        .target(name: "AdAttributionKit", dependencies: ["Primitives"]),
        // The only target that imports swift-crypto: verifying (and, for demos and tests, making)
        // the signatures the protocols use, and blind-signing PCM tokens (RFC 9474, `_CryptoExtras`).
        .target(name: "Signatures", dependencies: [.product(name: "Crypto", package: "swift-crypto"),
                                                   .product(name: "_CryptoExtras", package: "swift-crypto")]),
        // App developers' postbacks: either protocol read, signatures checked, duplicates told
        // apart, and their records in the log.
        .target(name: "Postbacks", dependencies: ["Primitives", "SKAdNetwork", "AdAttributionKit", "Signatures", "ReportStore", "Locking", "DurableFiles"]),
        // Apple Ads attribution (seed 002): the token, the record Apple answers, when to call again.
        .target(name: "AppleAds", dependencies: ["Primitives"]),
        // Apple Ads tokens and Apple's answers in the log: the outbox that survives restarts.
        .target(name: "AppleAdsRecords", dependencies: ["AppleAds", "ReportStore", "Primitives"]),
        // An app's Info.plist attribution keys, read as the device reads them: windows, cooldowns, endpoints.
        .target(name: "AppConfiguration", dependencies: ["Primitives"]),
        // The app developers' registrations: apps with their conversion-value schemas, ad networks.
        .target(name: "AppDevelopers", dependencies: ["Primitives"]),
        // Marketers' registrations: advertisers and the sites they own, and the viewer tokens' rules.
        .target(name: "Marketers", dependencies: ["Primitives"]),
        // The site owners' domain: registrations, the trigger ledger, the timing model's verdicts.
        .target(name: "SiteOwners", dependencies: ["Primitives", "PCM"]),
        // The append-only, checksummed report log with group commit, and the rejection ring.
        .target(name: "ReportStore", dependencies: ["Primitives", "Locking", "CSystemShims"]),
        // Small JSON files replaced whole and atomically: registries, token keys, the export's cursor.
        .target(name: "DurableFiles"),
        // The log's records in ClickHouse, over its HTTP interface with Foundation: tables, batches,
        // the durable cursor, the exporter's thread. Knows the store and the codecs, no protocol.
        .target(name: "ClickHouseExport", dependencies: ["ReportStore", "Primitives", "Locking", "DurableFiles", "RawHTTPClient"]),
        // PCM's records in the log: reports and triggers, encoded and decoded above the store.
        .target(name: "PCMRecords", dependencies: ["ReportStore", "Primitives", "PCM", "SiteOwners", "Locking"]),
        // The application: routes, configuration, authentication, export.
        .target(name: "Endpoint", dependencies: ["HTTPServer", "Primitives", "PCM", "SiteOwners", "ReportStore", "PCMRecords", "Locking",
                                                "Postbacks", "AdAttributionKit", "SKAdNetwork", "AppDevelopers", "AppConfiguration", "AppleAds", "Marketers", "AppleAdsRecords", "Signatures",
                                                "RawHTTPClient", "DurableFiles", "ClickHouseExport", "CSystemShims"]),
        // `attribution-endpoint demo`: the endpoint on a manual clock, driven through its real HTTP paths.
        .target(name: "Demo", dependencies: ["Endpoint", "Primitives", "SiteOwners", "RawHTTPClient", "Signatures", "SKAdNetwork", "AdAttributionKit",
                                             "AppleAdsStandIn"]),
        // A stand-in for Apple's attribution API (scripted answers, slow, held, dropped): the demo's and the tests'.
        .target(name: "AppleAdsStandIn"),
        // A raw-socket HTTP/1.1 client: it sends exactly the bytes it is given (the demo, live tests).
        .target(name: "RawHTTPClient"),
        // Wires the server and the demo to the command line.
        // It exports Foundation's URL host check as Swift 6.3.1 should have it (CSystemShims,
        // url_host_check.c): without it every call to Apple's API leaks 43 bytes.
        .executableTarget(name: "attribution-endpoint", dependencies: ["Endpoint", "Demo"],
                          linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=CFURLSessionCurlHostIsEqual"], .when(platforms: [.linux]))]),

        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "RawHTTPClient", "Locking"]),
        .testTarget(name: "RulesTests", dependencies: ["Primitives", "PCM", "SiteOwners"],
                    resources: [.copy("Resources/test_psl.txt"), .copy("Resources/vectors")]),
        .testTarget(name: "PostbackTests", dependencies: ["Postbacks", "SKAdNetwork", "AdAttributionKit", "Signatures", "Primitives", "ReportStore"],
                    resources: [.copy("Resources/vectors")]),
        .testTarget(name: "AppDevelopersTests", dependencies: ["AppDevelopers", "AppleAds", "Primitives"], resources: [.copy("Resources")]),
        .testTarget(name: "AppConfigurationTests", dependencies: ["AppConfiguration", "Primitives"], resources: [.copy("Resources")]),
        .testTarget(name: "TokenTests", dependencies: ["Signatures", "Primitives"], resources: [.copy("Resources/vectors")]),
        .testTarget(name: "ClickHouseExportTests", dependencies: ["ClickHouseExport", "ReportStore", "PCMRecords", "Postbacks", "AppleAdsRecords",
                                                           "AppleAds", "Primitives", "DurableFiles", "Locking", "HTTPServer", "SiteOwners", "PCM", "RawHTTPClient"]),
        .testTarget(name: "ReportStoreTests", dependencies: ["ReportStore", "PCMRecords", "Primitives", "PCM", "SiteOwners", "Locking"]),
        .testTarget(name: "EndpointTests", dependencies: ["Endpoint", "Demo", "Primitives", "PCM", "SiteOwners", "PCMRecords", "HTTPServer", "RawHTTPClient", "Locking", "attribution-endpoint",
                                                     "Postbacks", "ReportStore", "Signatures", "AppleAdsStandIn", "DurableFiles", "ClickHouseExport", "AppleAdsRecords"],
                    resources: [.copy("Resources/log-2026-11-23"), .copy("Resources/log-2026-11-25"), .copy("Resources/token-keys")]),
    ],
    swiftLanguageModes: [.v6]
)
