// swift-tools-version:6.1
import PackageDescription

// Foundation, Dispatch and the C library, and one package: apple/swift-crypto, for signatures,
// imported by the `Signatures` target alone (docs/THIRD_PARTY.md).

/// The layers, lowest first, each a folder of `Sources/`. A target depends on its own layer and
/// the layers below it, never above; the rules depend on rules alone, so that they stay pure
/// values (no I/O, no locks, no HTTP). `layered` checks it as the manifest is read: a dependency
/// that breaks it stops every build with a message that names it.
enum Layer: Int {
    /// Sockets, threads, locks, files, the one crypto wrapper: nothing about attribution.
    case platform
    /// The protocols' rules and the registrations' values.
    case rules
    /// The append-only log and what consumes it.
    case log
    /// Each protocol's records in the log, with their codecs.
    case records
    /// The endpoint: its surfaces (one folder each), their routes and the services that run.
    case application
    /// The executable, the demo and its stand-in for Apple's API.
    case commands

    var folder: String { "Sources/" + ["Platform", "Rules", "Log", "Records", "Application", "Commands"][rawValue] }
}

var layers: [String: Layer] = [:]

@MainActor func layered(_ layer: Layer, _ name: String, _ dependencies: [String] = [], products: [Target.Dependency] = [],
             executable: Bool = false, resources: [Resource]? = nil, swiftSettings: [SwiftSetting]? = nil,
             linkerSettings: [LinkerSetting]? = nil) -> Target {
    for dependency in dependencies {
        guard let below = layers[dependency] else { fatalError("\(name): \(dependency) is declared after it, or in no layer") }
        if below.rawValue > layer.rawValue { fatalError("\(name) (\(layer)) depends on \(dependency) (\(below)), a layer above it") }
        if layer == .rules && below != .rules { fatalError("\(name) is a rule and depends on \(dependency) (\(below)): rules depend on rules alone") }
    }
    layers[name] = layer
    let path = layer.folder + "/" + name
    let all = dependencies.map { Target.Dependency(stringLiteral: $0) } + products
    return executable
        ? .executableTarget(name: name, dependencies: all, path: path, swiftSettings: swiftSettings, linkerSettings: linkerSettings)
        : .target(name: name, dependencies: all, path: path, resources: resources, swiftSettings: swiftSettings, linkerSettings: linkerSettings)
}

let targets: [Target] = [
    // MARK: Platform
    // What Swift cannot reach: epoll's header, naming a thread, the CPU's CRC-32C instruction.
    layered(.platform, "CSystemShims"),
    // A pthread-mutex-guarded value that ThreadSanitizer can see through.
    layered(.platform, "Locking", ["CSystemShims"]),
    // A generic HTTP/1.1 server on non-blocking POSIX sockets. Knows nothing about attribution.
    layered(.platform, "HTTPServer", ["CSystemShims", "Locking"],
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
    // What runs beside the requests, as a list of services started in order and stopped in reverse.
    layered(.platform, "Lifecycle", ["Locking"]),
    // A raw-socket HTTP/1.1 client: it sends exactly the bytes it is given (the demo, live tests).
    layered(.platform, "RawHTTPClient"),
    // Small JSON files replaced whole and atomically: registries, token keys, the export's cursor.
    layered(.platform, "DurableFiles"),
    // The only target that imports swift-crypto: verifying (and, for demos and tests, making)
    // the signatures the protocols use, and blind-signing PCM tokens (RFC 9474, `_CryptoExtras`).
    layered(.platform, "Signatures", products: [.product(name: "Crypto", package: "swift-crypto"),
                                                .product(name: "_CryptoExtras", package: "swift-crypto")]),

    // MARK: Rules: pure value types, no locks, no I/O but the list read once, no HTTP
    // The primitives every protocol uses: JSON, base64url, time, sites and the Public Suffix List.
    layered(.rules, "Primitives", resources: [.copy("Resources/public_suffix_list.dat"), .copy("Resources/public_suffix_list.NOTICE.txt")]),
    // Private Click Measurement's wire rules: reports, roles, the trigger path.
    layered(.rules, "PCM", ["Primitives"]),
    // SKAdNetwork's postback rules: fields, versions, the signed message, the duplicate key.
    layered(.rules, "SKAdNetwork", ["Primitives"]),
    // AdAttributionKit's postback rules: the compact JWS, its payload, Apple's key ids.
    layered(.rules, "AdAttributionKit", ["Primitives"]),
    // Apple Ads attribution (seed 002): the token, the record Apple answers, when to call again.
    layered(.rules, "AppleAds", ["Primitives"]),
    // An app's Info.plist attribution keys, read as the device reads them: windows, cooldowns, endpoints.
    layered(.rules, "AppConfiguration", ["Primitives"]),
    // The app developers' registrations: apps with their conversion-value schemas, ad networks.
    layered(.rules, "AppDevelopers", ["AppleAds", "Primitives"]),
    // Marketers' registrations: advertisers and the sites they own, and the viewer tokens' rules.
    layered(.rules, "Marketers", ["Primitives"]),
    // The site owners' domain: registrations, the trigger ledger, the timing model's verdicts.
    layered(.rules, "SiteOwners", ["Primitives", "PCM"]),
    // Relays: destinations and their rules, the URL and the address they may reach, what an answer means.
    layered(.rules, "Relays", ["Primitives"]),

    // MARK: The log and its consumers
    // The append-only, checksummed log of records with group commit, and the rejection ring.
    layered(.log, "RecordLog", ["Primitives", "Locking", "CSystemShims"]),
    // The one way to follow the log: a consumer's durable cursor, the thread that runs its turns,
    // its retry schedule, failures and lag. The ClickHouse export is one consumer; relays are others.
    layered(.log, "LogConsumer", ["Primitives", "Locking", "DurableFiles"]),
    // The log's records in ClickHouse, over its HTTP interface with Foundation: tables, batches,
    // the consumer that sends them. Knows the store and the codecs, no protocol.
    layered(.log, "ClickHouseExport", ["RecordLog", "LogConsumer", "Primitives", "Locking", "DurableFiles", "RawHTTPClient"]),
    // Relays: each destination a consumer of the log with its own cursor and thread, its copies
    // sent with URLSession, headers and signatures as receivers check them. Knows no protocol:
    // the endpoint picks the copies out of the records.
    layered(.log, "Relaying", ["RecordLog", "LogConsumer", "Primitives", "Locking", "DurableFiles", "Relays", "Signatures"]),

    // MARK: Records
    // PCM's records in the log: reports and triggers, encoded and decoded above the store.
    layered(.records, "PCMRecords", ["RecordLog", "Primitives", "PCM", "SiteOwners", "Locking"]),
    // App developers' postbacks: either protocol read, signatures checked, duplicates told
    // apart, and their records in the log.
    layered(.records, "Postbacks", ["Primitives", "SKAdNetwork", "AdAttributionKit", "Signatures", "RecordLog", "Locking", "DurableFiles"]),
    // Apple Ads tokens and Apple's answers in the log: the outbox that survives restarts.
    layered(.records, "AppleAdsRecords", ["AppleAds", "RecordLog", "Primitives"]),

    // MARK: The application
    // The endpoint: its surfaces (a folder each), configuration, access, restart, operations.
    layered(.application, "Endpoint", ["HTTPServer", "Lifecycle", "Primitives", "PCM", "SiteOwners", "RecordLog", "PCMRecords", "Locking",
                                       "Postbacks", "AdAttributionKit", "SKAdNetwork", "AppDevelopers", "AppConfiguration", "AppleAds",
                                       "Marketers", "AppleAdsRecords", "Signatures", "RawHTTPClient", "DurableFiles", "ClickHouseExport", "LogConsumer", "Relays", "Relaying",
                                       "CSystemShims"]),

    // MARK: Commands
    // A stand-in for Apple's attribution API (scripted answers, slow, held, dropped): the demo's and the tests'.
    layered(.commands, "AppleAdsStandIn"),
    // `attribution-endpoint demo`: the endpoint on a manual clock, driven through its real HTTP paths.
    layered(.commands, "Demo", ["Endpoint", "Primitives", "SiteOwners", "RawHTTPClient", "Signatures", "SKAdNetwork", "AdAttributionKit",
                                "AppleAdsStandIn"]),
    // Wires the server and the demo to the command line.
    // It exports Foundation's URL host check as Swift 6.3.1 should have it (CSystemShims,
    // url_host_check.c): without it every call to Apple's API leaks 43 bytes.
    layered(.commands, "attribution-endpoint", ["Endpoint", "Demo"], executable: true,
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=CFURLSessionCurlHostIsEqual"], .when(platforms: [.linux]))]),
]

let package = Package(
    name: "attribution-endpoint",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "attribution-endpoint", targets: ["attribution-endpoint"]),
        // For the benchmark tools in benchmarks/, which write logs through the real store.
        .library(name: "RecordLog", targets: ["RecordLog", "PCMRecords"]),
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
    targets: targets + [
        .testTarget(name: "RelayingTests", dependencies: ["Relaying", "Relays", "RecordLog", "LogConsumer", "HTTPServer", "Locking",
                                                         "Primitives", "Signatures"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "Locking"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "RawHTTPClient", "Locking"]),
        .testTarget(name: "RulesTests", dependencies: ["Primitives", "PCM", "SiteOwners", "Relays", "Marketers"],
                    resources: [.copy("Resources/test_psl.txt"), .copy("Resources/vectors")]),
        .testTarget(name: "PostbackTests", dependencies: ["Postbacks", "SKAdNetwork", "AdAttributionKit", "Signatures", "Primitives", "RecordLog"],
                    resources: [.copy("Resources/vectors")]),
        .testTarget(name: "AppDevelopersTests", dependencies: ["AppDevelopers", "AppleAds", "Primitives"], resources: [.copy("Resources")]),
        .testTarget(name: "AppConfigurationTests", dependencies: ["AppConfiguration", "Primitives"], resources: [.copy("Resources")]),
        .testTarget(name: "TokenTests", dependencies: ["Signatures", "Primitives"], resources: [.copy("Resources/vectors")]),
        .testTarget(name: "LogConsumerTests", dependencies: ["LogConsumer", "DurableFiles", "Locking", "Primitives"]),
        .testTarget(name: "ClickHouseExportTests", dependencies: ["ClickHouseExport", "LogConsumer", "RecordLog", "PCMRecords", "Postbacks", "AppleAdsRecords",
                                                           "AppleAds", "Primitives", "DurableFiles", "Locking", "HTTPServer", "SiteOwners", "PCM", "RawHTTPClient"]),
        .testTarget(name: "RecordLogTests", dependencies: ["RecordLog", "PCMRecords", "Primitives", "PCM", "SiteOwners", "Locking"]),
        .testTarget(name: "EndpointTests", dependencies: ["Endpoint", "Demo", "Primitives", "PCM", "SiteOwners", "PCMRecords", "HTTPServer", "RawHTTPClient", "Locking", "attribution-endpoint",
                                                     "Postbacks", "RecordLog", "Signatures", "AppleAdsStandIn", "DurableFiles", "ClickHouseExport", "AppleAdsRecords"],
                    resources: [.copy("Resources/log-2026-11-23"), .copy("Resources/log-2026-11-25"), .copy("Resources/token-keys")]),
    ],
    swiftLanguageModes: [.v6]
)
