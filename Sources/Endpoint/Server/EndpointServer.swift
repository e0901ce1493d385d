import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import HTTPServer
import Locking
import AppDevelopers
import PCMRecords
import Postbacks
import ReportStore

/// The running endpoint: the store, the routes and the HTTP server, wired together.
public final class EndpointServer: Sendable {
    public let configuration: EndpointConfiguration
    public let store: ReportStore
    public let adminToken: String
    /// Where the generated token is kept, when it was not configured.
    public let adminTokenFile: String?
    /// The one clock: manual with `--manual-clock`, else `systemClock`.
    public let clock: EndpointClock
    /// The summary page's folder, or nil with `--no-page`.
    public let publicDirectory: String?
    private let book: SiteOwnerBook
    private let summary: SummaryBook
    private let checkpointer: SummaryCheckpointer
    /// The log prefix the summary's checkpoint claimed at start (read from its header).
    private let claimedCheckpoint: LogPrefix?
    /// The log's size at start: the summary is rebuilt from what lies before it.
    private let summaryRebuildEnd: Int
    private let rebuildDone = DispatchGroup()
    private let checkpointOutcome = Locked<String?>(nil)
    private let stopping = Locked(false)
    private let http: HTTPServer
    /// Apple Ads tokens and the calls to Apple each still needs.
    let appleAds: AppleAdsOutbox
    private let routes: EndpointRoutes
    private let tokenKeys: TokenKeyBook
    private let signingPool: WorkerPool

    public init(configuration: EndpointConfiguration, systemClock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) throws {
        try configuration.check()
        self.configuration = configuration
        publicDirectory = try configuration.resolvedPublicDirectory()
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        (adminToken, adminTokenFile) = try AdminToken.resolve(configured: configuration.adminToken,
                                                              dataDirectory: configuration.dataDirectory)
        let clock = EndpointClock(manual: configuration.manualClock, system: systemClock)
        self.clock = clock
        // The checkpoint's header names the log prefix it was built from; replay fingerprints the
        // log there, so the checkpoint can be checked without a second pass over the log.
        let claimed = SummaryCheckpoint.claimedPrefix(atPath: configuration.dataDirectory + "/" + SummaryCheckpoint.fileName)
        claimedCheckpoint = claimed
        // The event loop commits at the end of each turn (EndpointRoutes.finishTurn); the trigger
        // ledger is rebuilt from the records replay shows on the way.
        let tokenKeys = try TokenKeyBook(dataDirectory: configuration.dataDirectory, servedSites: configuration.sites,
                                         foreignKeys: try configuration.resolvedTokenPublicKeys(), clock: { clock.now() },
                                         announce: { key in
                                             EventLog.write("token_key_created", ["site": .string(key.site), "key_id": .string(key.keyID),
                                                                                  "serves_from": .string(key.servesFrom.rfc3339)])
                                         })
        let tokenChecks = TokenChecks(keys: tokenKeys, requireTokens: configuration.requireTokens, clock: { clock.now() })
        var replayed = ReplayedTriggers()
        let ledger = PostbackLedger()
        store = try ReportStore(directory: configuration.dataDirectory, committer: .owner,
                                preallocation: configuration.logPreallocationMB << 20, fingerprintAt: claimed?.end,
                                clock: { clock.now() }, replaying: { record in
                                    replayed.take(record)
                                    ledger.take(record)
                                    if let verified = StoredReport.withVerifiedToken(record) { tokenChecks.take(verified) }
                                })
        // A new log has nothing to rebuild: its summary is complete, and empty, from the start.
        let summary = SummaryBook(complete: store.bytesOnDisk == 0)
        self.summary = summary
        checkpointer = SummaryCheckpointer(directory: configuration.dataDirectory, store: store, summary: summary,
                                           interval: configuration.summaryCheckpointInterval)
        summaryRebuildEnd = store.bytesOnDisk

        let siteRules = SiteRules(developmentMode: configuration.developmentMode)
        book = try SiteOwnerBook(dataDirectory: configuration.dataDirectory, model: configuration.timingModel,
                                 siteRules: siteRules, replayed: replayed, now: clock.now())
        try Self.ensureRegistered(configuration, in: book)
        let trustedProxies = configuration.trustedProxies.compactMap(AddressRange.init)
        let metrics = EndpointMetrics()
        let rejections = RejectionLog()
        let ingest = ReportIngest(
            validator: PCMReportValidator(siteRules: siteRules, sites: RememberedSiteChecks(siteRules)),
            roles: RoleResolver(servedSites: Set(configuration.sites), developmentMode: configuration.developmentMode),
            trustedProxies: trustedProxies,
            maxReportBytes: configuration.maxReportBytes,
            store: store, rejections: rejections, metrics: metrics, book: book, summary: summary, tokens: tokenChecks,
            clock: { clock.now() })
        let bearer = AdminToken.gate(adminToken)
        let triggers = TriggerIngest(book: book, store: store, trustedProxies: trustedProxies, servedSites: Set(configuration.sites),
                                     rejections: rejections, clock: { clock.now() })
        let postbacks = PostbackIntake(
            keyring: try PostbackKeyring(testKeys: configuration.postbackKeys), ledger: ledger,
            servedSites: Set(configuration.sites), developmentMode: configuration.developmentMode,
            trustedProxies: trustedProxies, maxPostbackBytes: configuration.maxPostbackBytes, store: store,
            rejections: rejections, metrics: metrics, clock: { clock.now() },
            pool: configuration.signatureThreads.map { $0 > 0 ? WorkerPool(named: "signature-check", threads: $0, priority: .background) : nil }
                ?? WorkerPool.forOtherCores(named: "signature-check", priority: .background))
        let apps = try AppBook(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        let appleAds = AppleAdsOutbox(store: store, client: AppleAdsClient(url: URL(string: configuration.appleAdsAPI)!,
                                                                          timeout: configuration.appleAdsTimeout,
                                                                          connections: AppleAdsOutbox.maxInFlight), clock: clock,
                                    maxPending: configuration.appleAdsMaxPending)
        self.appleAds = appleAds
        try Self.ensureRegistered(configuration, in: apps)
        self.tokenKeys = tokenKeys
        let signingThreads = WorkerPool.allowedCores()
        let signingPool = WorkerPool(named: "token-signing", threads: signingThreads, priority: .idle,
                                     maxWaiting: 64 * signingThreads)
        self.signingPool = signingPool
        let tokens = TokenSigning(keys: tokenKeys, pool: signingPool, trustedProxies: trustedProxies, rejections: rejections,
                                  metrics: metrics, clock: { clock.now() })
        let servedSite = ServedSite(sites: Set(configuration.sites), developmentMode: configuration.developmentMode,
                                    trustedProxies: trustedProxies)
        let surfaces = PCMRoutes(reports: ingest, triggers: triggers, tokens: tokens).routes
            + AppRoutes(postbacks: postbacks).routes
            + AppRegistrationRoutes(book: apps, servedSites: Set(configuration.sites)).routes(bearer: bearer)
            + AppsSummaryRoutes(store: store, ledger: ledger, book: apps, appleAds: appleAds, clock: clock).routes(bearer: bearer)
            + PlistCheckRoutes(servedSites: Set(configuration.sites)).routes(bearer: bearer)
            + ConversionValueRoutes(book: apps, metrics: metrics, clock: clock, sites: servedSite).routes
            + AppleAdsRoutes(outbox: appleAds, sites: servedSite, metrics: metrics).routes
            + SiteOwnerRoutes(book: book, trustedProxies: trustedProxies, servedSites: Set(configuration.sites)).routes(bearer: bearer)
            + TokenKeyRoutes(keys: tokenKeys, pool: signingPool, clock: clock).routes(bearer: bearer)
            + SummaryRoutes(summary: summary, book: book, rejections: rejections, clock: clock).routes(bearer: bearer)
            + ExportRoutes(store: store, ledger: ledger, appleAds: appleAds, apps: apps).routes(bearer: bearer)
            + OperationsRoutes(store: store, metrics: metrics, rejections: rejections, clock: clock, tokenKeys: tokenKeys,
                               tokenChecks: tokenChecks, appleAds: appleAds).routes(bearer: bearer)
        let routes = EndpointRoutes(surfaces: surfaces, store: store, publicDirectory: publicDirectory, checkpointer: checkpointer,
                                    postbacks: postbacks, rejections: rejections, clock: { clock.now() }, trustedProxies: trustedProxies)
        self.routes = routes

        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxConnections = configuration.maxConnections
        http.requestTimeout = configuration.requestTimeout
        http.idleTimeout = configuration.idleTimeout
        http.accessLog = configuration.accessLog ? LineWriter.standardError : nil
        // The HTTP layer refuses only the absurd; the report path applies its own, smaller limit
        // so that an oversized report is counted and explained like any other rejection.
        http.limits.maxBodyBytes = max(64 * 1024, configuration.maxReportBytes, configuration.maxPostbackBytes)
        self.http = HTTPServer(configuration: http, handler: routes)
    }

    /// Adds the config file's registrations that are not in the registry yet. One that clashes
    /// with what is there stops the start, with the reason.
    private static func ensureRegistered(_ configuration: EndpointConfiguration, in book: SiteOwnerBook) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                for c in configuration.conversions where !registry.conversions.contains(c) {
                    try Registrations.requireServed(c.site, field: "conversions: site", servedSites: Set(configuration.sites))
                    try registry.add(c, siteRules: book.siteRules)
                }
                for c in configuration.campaigns where !registry.campaigns.contains(c) {
                    try Registrations.requireServed(c.sourceSite, field: "campaigns: source_site", servedSites: Set(configuration.sites))
                    try registry.add(c, siteRules: book.siteRules)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file registration refused: \(error.detail)")
        }
    }

    /// Adds the config file's apps, ad networks and Apple Ads campaigns that are not registered yet.
    private static func ensureRegistered(_ configuration: EndpointConfiguration, in book: AppBook) throws {
        do {
            try book.update { (registry) throws(RequestProblem) in
                for app in configuration.apps where registry.app(id: app.appID) != app {
                    try Registrations.requireServed(app.site, field: "apps: site", servedSites: Set(configuration.sites))
                    if registry.app(id: app.appID) != nil { registry.removeApp(appID: app.appID) }
                    try registry.add(app, siteRules: book.siteRules)
                }
                for network in configuration.adNetworks where registry.adNetwork(id: network.id) != network {
                    if registry.adNetwork(id: network.id) != nil { registry.removeAdNetwork(id: network.id) }
                    try registry.add(network)
                }
                for campaign in configuration.appleAdsCampaigns where registry.appleAdsCampaign(id: campaign.campaignID) != campaign {
                    registry.removeAppleAdsCampaign(id: campaign.campaignID)
                    try registry.add(campaign)
                }
            }
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file registration refused: \(error.detail)")
        }
    }

    /// Starts listening; returns the bound port.
    @discardableResult
    public func start() throws -> UInt16 {
        let replay = store.replay
        EventLog.write("replay", [
            "log": .string(store.logPath), "records": .number(String(replay.records)),
            "corrupt_records": .number(String(replay.corruptRecords.count)),
            "corrupt_offsets": .array(replay.corruptRecords.map { .number(String($0.offset)) }),
            "torn_tail_bytes": .number(String(replay.tornTailBytes)),
            "seconds": .number(String(format: "%.3f", replay.seconds)),
        ])
        // Before the first request, so that one asking for a key still being made waits for it.
        tokenKeys.generateMissing()
        let port = try http.start()
        let http = self.http
        appleAds.start(wakeLoop: { http.wakeForDeferredWork() })
        // Serving first, the summary after: a restart with ten million reports takes reports
        // at once, and the summary API answers 503 with its progress until it is ready.
        let (summary, store, end, stopping) = (self.summary, self.store, summaryRebuildEnd, self.stopping)
        let (claimed, checkpointer, checkpointOutcome) = (claimedCheckpoint, self.checkpointer, self.checkpointOutcome)
        rebuildDone.startThread(named: "summary-rebuild") {
            let started = Date()
            let (base, from, outcome) = SummaryCheckpoint.restore(atPath: checkpointer.path, claimed: claimed,
                                                                  replayed: store.replay.prefixAtFingerprint)
            if outcome == "used", let claimed { checkpointer.adopt(claimed) }
            guard summary.rebuild(from: store, base: base, start: from, through: end, shouldStop: { stopping.withLock { $0 } }) else { return }
            checkpointOutcome.withLock { $0 = outcome }
            EventLog.write("summary_rebuilt", [
                "seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started))),
                "checkpoint": .string(outcome), "bytes_read": .number(String(max(0, end - from))),
            ])
        }
        var fields: [(String, JSONValue)] = [
            ("address", .string("\(configuration.host):\(port)")), ("data", .string(configuration.dataDirectory)),
            ("sites", .array(configuration.sites.map { .string($0) })), ("dev", .bool(configuration.developmentMode)),
            ("manual_clock", .bool(configuration.manualClock)), ("triggers", .number(String(book.triggerCount))),
            // Where the summary page comes from; null only with --no-page.
            ("page", publicDirectory.map { .string($0) } ?? .null),
        ]
        if let adminTokenFile { fields.append(("admin_token_file", .string(adminTokenFile))) }
        // The keys each site serves now; a site without one yet logs `token_key_created` when it is made.
        fields.append(("token_keys", .object(configuration.sites.compactMap { site in
            tokenKeys.servedKey(for: site).map { JSONMember(key: site, value: .string($0.keyID)) }
        })))
        EventLog.write("listening", fields)
        return port
    }

    /// Waits until every Apple Ads call due at the clock's time is made and recorded (the demo).
    @discardableResult
    public func waitUntilAppleAdsSettled(timeout: Double = 30) -> Bool {
        appleAds.waitUntilSettled(timeout: timeout)
    }

    /// Waits until the token keys a first start makes are made (the demo).
    public func waitUntilTokenKeysAreMade() {
        tokenKeys.waitForGeneration()
    }

    /// Waits until the summary has been rebuilt from the log after `start` (tests and the demo).
    public func waitUntilSummaryIsReady() {
        rebuildDone.wait()
    }

    /// What became of the summary's checkpoint at start, once the summary is ready: `used`,
    /// `missing`, `stale` (the log no longer begins as it did) or `damaged…`.
    public var summaryCheckpoint: String? { checkpointOutcome.withLock { $0 } }

    /// Answers `request` as the route table does, without a socket: for tests of what the endpoint
    /// answers, not of HTTP framing. An answer that waits for a commit (a report, a trigger) gets
    /// it here, as the event loop's turn would.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let answer = Locked<HTTPResponse?>(nil)
        // Signalled by the answer, and by work finished elsewhere (a postback's signature check)
        // that a turn's end would take up.
        let progress = DispatchSemaphore(value: 0)
        routes.handle(request, responder: HTTPResponder({ response in
            answer.withLock { $0 = response }
            progress.signal()
        }, wake: { progress.signal() }))
        // Only the postbacks and the commit of a turn's end, not the rest of it: the checkpointer's
        // timing belongs to the event loop's thread alone. The loop's own turn may commit it first;
        // either way the answer signals.
        while answer.withLock({ $0 == nil }) {
            routes.postbacks?.drain(budget: .infinity)
            store.commitQueued()
            if answer.withLock({ $0 == nil }) { progress.wait() }
        }
        return answer.withLock { $0! }
    }

    /// Stops accepting connections and lets requests in flight finish. Returns at once.
    public func shutdown() {
        http.shutdown()
    }

    /// Waits for the HTTP server to stop, then flushes and closes the store.
    public func waitUntilStopped() {
        http.waitUntilStopped()
        appleAds.stop()
        routes.postbacks?.stop()
        signingPool.stop()
        tokenKeys.stop()
        stopping.withLock { $0 = true }
        rebuildDone.wait()
        store.close()
        checkpointer.finish()
        EventLog.write("stopped", ["reports": .number(String(store.count))])
    }

    /// The command-line program: parse, start, run until SIGINT or SIGTERM, stop cleanly.
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        let configuration: EndpointConfiguration
        do {
            switch try EndpointConfiguration.parse(arguments: arguments, environment: environment) {
            case .help:
                print(EndpointConfiguration.helpText)
                return 0
            case .run(let parsed):
                configuration = parsed
            }
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint: \(error)\n".utf8))
            return 64  // EX_USAGE
        }
        let server: EndpointServer
        do {
            server = try EndpointServer(configuration: configuration)
            try server.start()
        } catch {
            FileHandle.standardError.write(Data("attribution-endpoint: cannot start: \(error)\n".utf8))
            return 1
        }
        return serveUntilSignalled(server)
    }

    /// Runs until SIGINT or SIGTERM, then stops cleanly; the process's exit code.
    public static func serveUntilSignalled(_ server: EndpointServer) -> Int32 {
        // Signals are taken as dispatch events, not handlers, so shutdown runs as ordinary code.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                EventLog.write("shutdown", ["signal": .number(String(number))])
                server.shutdown()
            }
            source.resume()
            return source
        }
        server.waitUntilStopped()
        sources.forEach { $0.cancel() }
        // The last lines get a moment to reach a slow reader; a stuck one does not hold the exit.
        LineWriter.standardError.close(waitingAtMost: 2)
        return 0
    }
}
