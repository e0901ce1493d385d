// swift-tools-version:6.1
// Benchmark tools, kept apart so that the product's Package.swift names no dependency but
// swift-crypto (and Hummingbird, the reference, stays out of it).
import PackageDescription

let package = Package(
    name: "benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "attribution-endpoint", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ],
    targets: [
        // What a Swift developer would otherwise write: Hummingbird 2, JSONDecoder, field checks,
        // and (in durable mode) an append with fsync before answering.
        .executableTarget(name: "hummingbird-reference",
                          dependencies: [.product(name: "Hummingbird", package: "hummingbird")]),
        // Fills a data directory with N reports (or, with --mix app, a top app's mix of every kind)
        // through the real RecordLog, for scale tests.
        .executableTarget(name: "log-generator",
                          dependencies: [.product(name: "RecordLog", package: "attribution-endpoint"),
                                         .product(name: "Postbacks", package: "attribution-endpoint"),
                                         .product(name: "AppleAdsRecords", package: "attribution-endpoint")]),
        // Signature checks per second on one core, through the endpoint's own keyring: the
        // yardstick for postback ingest.
        .executableTarget(name: "postback-verify-rate",
                          dependencies: [.product(name: "Postbacks", package: "attribution-endpoint")]),
        // RSA-4096 blind signatures and token-signature checks per second on one core, through
        // the endpoint's own wrappers: the yardsticks for token signing and report verification.
        .executableTarget(name: "token-sign-rate",
                          dependencies: [.product(name: "Signatures", package: "attribution-endpoint")]),
        // The conversion-value API's answer without HTTP, on one core: reading the counters and
        // choosing the value, as each request does.
        .executableTarget(name: "conversion-value-rate",
                          dependencies: [.product(name: "AppDevelopers", package: "attribution-endpoint")]),
    ],
    swiftLanguageModes: [.v6]
)
