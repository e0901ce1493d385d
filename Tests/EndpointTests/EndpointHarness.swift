import DurableFiles
import Demo
import Dispatch
import PCM
import Primitives
import SiteOwners
import Foundation
import Locking
import LogConsumer
import HTTPServer
import RawHTTPClient
import Signatures
import Testing
@testable import Endpoint

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    let now = Locked<Int64>(1_795_168_800_000)  // 2026-11-20T10:00:00Z
    func set(_ text: String) { now.withLock { $0 = Timestamp(rfc3339: text)!.millisecondsSinceEpoch } }
    var read: @Sendable () -> Timestamp { { Timestamp(millisecondsSinceEpoch: self.now.withLock { $0 }) } }
}

/// The repository this test file is in.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "endpoint-tests-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    _ = removedAtExit
    madeDirectories.withLock { $0.append(path) }
    return path
}

/// Every folder `temporaryDirectory()` made, removed when the test process exits (each live test
/// leaves a log of tens of MB; a run made about 40 GB of them over a day of runs).
private let madeDirectories = Locked<[String]>([])
private let removedAtExit: Void = {
    atexit {
        for path in madeDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}()

/// Token keys for the test sites, made once per test run: an RSA-4096 key takes a second or
/// more to make, and most tests start an endpoint of their own.
enum TestTokenKeys {
    private struct Fixture: Decodable {
        var keys: [String: String]
        var spares: [String]
    }

    /// Made once by hand (Resources/token-keys), so that no test run waits for RSA-4096 key
    /// generation.
    private static let fixture: Fixture = {
        let url = Bundle.module.url(forResource: "token-keys/test-token-keys", withExtension: "json")!
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    private static let made = Locked<[String: TokenSigningKey]>(
        fixture.keys.mapValues { try! TokenSigningKey(derRepresentation: Array(Data(base64Encoded: $0)!)) })

    private static let spares = fixture.spares.map { try! TokenSigningKey(derRepresentation: Array(Data(base64Encoded: $0)!)) }
    private static let nextSpare = Locked(0)

    /// What a test's endpoint makes when it makes a key (a site's first start, a rotation): the
    /// spare fixture keys in turn, so that two keys made one after the other differ.
    @Sendable static func spare() -> TokenSigningKey {
        spares[nextSpare.withLock { n in
            defer { n += 1 }
            return n % spares.count
        }]
    }

    /// The test key of `site`, the same for every test of the run. A site without a fixture fails
    /// the test that asked (an RSA-4096 key takes seconds to make, minutes under ThreadSanitizer)
    /// and gets a key made for it, so that the rest of the test still runs.
    static func key(_ site: String) -> TokenSigningKey {
        made.withLock { made in
            if let key = made[site] { return key }
            Issue.record("no test key for \(site): add one to Tests/EndpointTests/Resources/token-keys/test-token-keys.json")
            let key = try! TokenSigningKey.generate()
            made[site] = key
            return key
        }
    }

    /// The same for a command line's `--data` and `--site`s.
    static func seed(arguments: [String]) throws {
        guard let i = arguments.firstIndex(of: "--data"), i + 1 < arguments.count else { return }
        let sites = arguments.first == "demo" ? Demo.sites
            : arguments.indices.filter { arguments[$0] == "--site" && $0 + 1 < arguments.count }.map { arguments[$0 + 1] }
        try FileManager.default.createDirectory(atPath: arguments[i + 1], withIntermediateDirectories: true)
        try seed(arguments[i + 1], sites: sites)
    }

    /// Writes the test keys for `sites` into a new data directory, as a first start would have.
    static func seed(_ directory: String, sites: [String]) throws {
        let path = directory + "/" + TokenKeyStore.fileName
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let then = Timestamp(rfc3339: "2026-01-01T00:00:00Z")!
        let entries = sites.map { site in
            TokenKeyStore.File.Entry(site: site, privateKey: Data(key(site).derRepresentation).base64EncodedString(),
                                    createdAt: then, servesFrom: then)
        }
        guard !entries.isEmpty else { return }
        try DurableJSONFile(path: path, empty: TokenKeyStore.File(), mode: 0o600).save(TokenKeyStore.File(keys: entries))
    }
}

/// Signalled by a background thread at each step of its own: a test waits for a condition
/// step by step, never on a timer.
final class TurnSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func signal() { semaphore.signal() }

    /// Waits step after step until `condition` holds, for at most `seconds`.
    func until(within seconds: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = DispatchTime.now() + seconds
        while try !condition() {
            guard DispatchTime.now() < deadline, semaphore.wait(timeout: deadline) == .success else { return try condition() }
        }
        return true
    }
}

/// The real endpoint, in process, on port 0.
final class LiveEndpoint: Sendable {
    let server: EndpointServer
    let port: UInt16
    let directory: String
    let clock = ManualClock()
    /// The ClickHouse export's turns, as they end (with `--clickhouse`).
    let exportTurns = TurnSignal()
    /// Every relay destination's turns, as they end.
    let relayTurns = TurnSignal()

    init(sites: [String] = ["news.example", "shop.example"], dev: Bool = false, trustedProxies: [String] = [],
         token: String? = "test-token", directory: String = temporaryDirectory(), startingAt: String? = nil,
         configure: (inout EndpointConfiguration) -> Void = { _ in },
         beforeBackgroundRebuild: @escaping @Sendable () -> Void = {}) throws {
        // The clock the server starts with, and replays by (2026-11-20T10:00Z unless given).
        if let startingAt { clock.set(startingAt) }
        var configuration = EndpointConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.sites = sites
        configuration.developmentMode = dev
        configuration.trustedProxies = trustedProxies
        configuration.adminToken = token
        configuration.accessLog = false
        configuration.publicDirectory = repositoryRoot + "/Public"
        configure(&configuration)
        self.directory = directory
        try TestTokenKeys.seed(directory, sites: configuration.sites)
        let (exportTurns, relayTurns) = (self.exportTurns, self.relayTurns)
        server = try EndpointServer(configuration: configuration, systemClock: clock.read,
                                    hooks: .init(beforeBackgroundRebuild: beforeBackgroundRebuild, makeTokenKey: TestTokenKeys.spare,
                                                 exportTurnEnded: { _ in exportTurns.signal() },
                                                 relayTurnEnded: { _, _ in relayTurns.signal() },
                                                 relayRetry: RetrySchedule(first: 0.05, longest: 0.2)))
        port = try server.start()
    }

    func stop() {
        server.shutdown()
        server.waitUntilStopped()
    }

    func post(_ body: String, host: String = "news.example", contentType: String? = "application/json",
              path: String = "/.well-known/private-click-measurement/report-attribution/",
              headers: [(String, String)] = []) throws -> RawResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        return request("POST", path, host: host, headers: all, body: Array(body.utf8))
    }

    func get(_ path: String, token: String? = "test-token", method: String = "GET") throws -> RawResponse {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return request(method, path, headers: headers)
    }

    /// A request handed to the event loop in process, as it would come off a socket from
    /// 127.0.0.1: the same route table, turn and commit, without HTTP framing (tests of framing,
    /// pipelining, timeouts and shutdown use a socket). Status 0 when the answer was withdrawn.
    func request(_ method: String, _ path: String, host: String = "localhost", headers: [(String, String)] = [],
                 body: [UInt8] = []) -> RawResponse {
        var all = HTTPHeaders()
        all.add(name: "Host", value: host)
        for (name, value) in headers { all.add(name: name, value: value) }
        guard let response = server.respond(to: HTTPRequest(method: method, target: path, headers: all, body: body,
                                                            remoteAddress: "127.0.0.1")) else {
            // Withdrawn: a connection would have been closed with nothing sent.
            return RawResponse(status: 0, headers: [], body: [])
        }
        var bytes: [UInt8] = []
        switch response.body {
        case .bytes(let b): bytes = b
        case .stream(let stream): bytes = stream.readAll()
        }
        return RawResponse(status: response.status, headers: response.headers.map { ($0.name, $0.value) },
                           body: method == "HEAD" ? [] : bytes)
    }

    /// The export as JSON objects.
    func export(_ query: String = "") throws -> [[String: Any]] {
        let response = try get("/api/reports" + query)
        guard response.status == 200 else { throw RawHTTPError("export answered \(response.status): \(response.bodyText)") }
        return try response.bodyText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }
}

func json(_ response: RawResponse) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
}

func reportBody(sourceSite: String = "news.example", sourceID: Int = 42, destination: String = "shop.example",
                triggerData: Int = 5, extra: String = "") -> String {
    #"{"source_engagement_type":"click","source_site":"\#(sourceSite)","source_id":\#(sourceID),"attributed_on_site":"\#(destination)","trigger_data":\#(triggerData),"version":3\#(extra)}"#
}

/// The built `attribution-endpoint` executable, next to the test bundle.
func endpointExecutable() throws -> URL {
    var candidates: [URL] = []
    let selfExe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    candidates.append(selfExe.deletingLastPathComponent())
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
    candidates.append(Bundle.main.bundleURL)
    for directory in candidates {
        let url = directory.appendingPathComponent("attribution-endpoint")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw RawHTTPError("attribution-endpoint executable not found near \(candidates)")
}

/// The endpoint as a separate process, for signals.
final class EndpointProcess {
    let process = Process()
    let port: UInt16
    private let stderr = Pipe()
    private var captured = Data()
    private let exited = DispatchSemaphore(value: 0)

    /// `accessLog`: keep the endpoint's default access log on stderr (the tests turn it off).
    /// `executable` and `workingDirectory`: another copy of the binary, run from another folder.
    init(arguments: [String], accessLog: Bool = false, executable: URL? = nil, workingDirectory: String? = nil) throws {
        process.executableURL = try executable ?? endpointExecutable()
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        process.arguments = ["--port", "0"] + (accessLog ? [] : ["--no-access-log"]) + arguments
        try TestTokenKeys.seed(arguments: arguments)
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // The "listening" event line names the port.
        var port: UInt16?
        while port == nil {
            let chunk = stderr.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw RawHTTPError("endpoint exited before listening: \(String(decoding: captured, as: UTF8.self))") }
            captured.append(chunk)
            for line in String(decoding: captured, as: UTF8.self).split(separator: "\n") where line.contains("\"event\":\"listening\"") {
                if let range = line.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                    port = UInt16(line[range].split(separator: ":")[1])
                }
            }
        }
        self.port = port!
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits up to `timeout` seconds for the process to exit, without reading its stderr.
    func exits(within timeout: Double) -> Bool {
        exited.wait(timeout: .now() + timeout) == .success
    }

    /// Waits for exit; returns the status and everything written to stderr.
    func wait() -> (status: Int32, stderr: String) {
        let rest = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        captured.append(rest)
        return (process.terminationStatus, String(decoding: captured, as: UTF8.self))
    }
}

func runEndpoint(_ arguments: [String], executable: URL? = nil, workingDirectory: String? = nil) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = try executable ?? endpointExecutable()
    if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
    process.arguments = arguments
    try TestTokenKeys.seed(arguments: arguments)
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A loopback port held by a socket that is bound and never listens: a connection to it is
/// refused at once, and no other test's listener or client can be given it until it is let go.
/// (A port found free and closed can be handed to the next test that asks for port 0.)
final class HeldPort: Sendable {
    let port: UInt16
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        guard fd >= 0, bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
    }

    /// Lets the port go, for a listener of the test's own to take it at once.
    func release() { close(fd) }
}
