import ClickHouseExport
import CSystemShims
import DurableFiles
import Foundation
import HTTPServer
import Lifecycle
import Locking
import LogConsumer
import PCM
import PCMRecords
import Postbacks
import Primitives
import RecordLog
import Signatures

/// The running endpoint: the store, the surfaces and the HTTP server, wired together. The
/// command line is `EndpointCommand`'s; what tests and the demo wait for is in
/// `EndpointServer+Waiting`.
public final class EndpointServer: Sendable {
    public let configuration: EndpointConfiguration
    public let store: RecordLog
    /// The admin token now: the start's, or the one a reload took from the token file.
    public var adminToken: String { access.adminToken }
    let access: AccessControl
    /// Where the generated token is kept, when it was not configured.
    public let adminTokenFile: String?
    /// The one clock: manual with `--manual-clock`, else `systemClock`.
    public let clock: EndpointClock
    /// The summary page's folder, or nil with `--no-page`.
    public let publicDirectory: String?
    let http: HTTPServer
    /// The route table the HTTP server serves.
    let routes: EndpointRoutes
    /// Apple Ads tokens and the calls to Apple each still needs.
    let appleAds: AppleAdsOutbox
    let tokenKeys: TokenKeyStore
    let summaryRebuild: SummaryRebuild
    /// The ClickHouse export, with `--clickhouse`.
    let exporter: ClickHouseExporter?
    /// The summary APIs' `?scope=cluster`, with `--clickhouse`.
    let clusterScope: ClusterScope?
    /// With `--retention-days`.
    let retention: LogRetention?
    /// With `--token-key-rotation-days`.
    let tokenKeyRotation: TokenKeyRotation?
    /// Lets the postback ledger's memory go after `--postback-window-days`.
    let postbackWindow: PostbackWindow
    private let heapTrim = HeapTrim()
    /// When each site and app last received something.
    let arrivals: Arrivals
    /// Each app's last development postbacks (the setup view's).
    let developmentPostbacks: DevelopmentPostbacks
    /// With `--apple-ads-platform`: the Apple Ads names' lookups.
    let appleAdsNames: AppleAdsNameLookup?
    /// The postback ledger and the Apps view, when a start could not take them from digests.
    let postbackRebuild: PostbackRebuild
    /// Sealed segments' digests, for the next start.
    let digests: SegmentDigests
    /// What the start spent, in seconds, taking the digests and the log after them ("digests") and
    /// rebuilding the Apple Ads outbox ("apple_ads"), side by side.
    let startSeconds: [String: Double]
    /// Segments this start took from their digests instead of reading them (0 when it read the
    /// whole log again, having found a digest or key table not of this log).
    let startedFromDigests: Int
    private let book: SiteOwnerStore
    private let checkpointer: SummaryCheckpointer
    private let postbacks: PostbackHandler
    private let signingPool: WorkerPool
    /// The threads that read the log for the exports, below the loop's priority.
    private let exportProducers: BodyProducers
    /// The threads the reads that compute their answer run on (the summaries, the overview, the
    /// plist check), below the loop's priority.
    private let readWorkers: WorkerPool
    /// Which sites each sealed segment holds: a scoped export opens only those that concern it.
    let segmentSites: SegmentSites
    private let turns: TurnRequester
    /// The relay destinations' deliveries.
    let relays: RelayService
    /// SIGHUP's: the config file and the shared files read again.
    let configurationReload: ConfigurationReload
    /// What runs (`makeServices`), once `start` has made it.
    private let services = Locked<ServiceGroup?>(nil)

    public convenience init(configuration: EndpointConfiguration, systemClock: @escaping @Sendable () -> Timestamp = { EndpointClock.systemNow() }) throws {
        try self.init(configuration: configuration, systemClock: systemClock, hooks: Hooks())
    }

    /// Where tests reach into what the server does on its own threads.
    struct Hooks: Sendable {
        /// Run on the threads that read the log again in the background (the postback ledger's,
        /// the Apple Ads outbox's) before they read: tests hold them there.
        var beforeBackgroundRebuild: @Sendable () -> Void = {}
        /// How a new PCM token key is made: tests hand out fixture keys instead of spending
        /// seconds on each RSA-4096 key.
        var makeTokenKey: @Sendable () throws -> TokenSigningKey = { try TokenSigningKey.generate() }
        /// Told each turn of the ClickHouse export as it ends: tests wait on it.
        var exportTurnEnded: (@Sendable (LogTurn) -> Void)?
        /// Told each turn of a relay destination's delivery as it ends, with its name.
        var relayTurnEnded: (@Sendable (String, LogTurn) -> Void)?
        /// How long a relay waits before trying a copy again: tests wait less than a destination would want.
        var relayRetry = RetrySchedule(first: 1, longest: 300)
    }

    init(configuration: EndpointConfiguration, systemClock: @escaping @Sendable () -> Timestamp, hooks: Hooks) throws {
        let (beforeBackgroundRebuild, makeTokenKey) = (hooks.beforeBackgroundRebuild, hooks.makeTokenKey)
        try configuration.check()
        self.configuration = configuration
        publicDirectory = try configuration.resolvedPublicDirectory()
        // Started on a backup's folder itself: checked against its manifest and taken, once.
        if RestoredData.isPending(configuration.dataDirectory) {
            try RestoredData.take(configuration.dataDirectory, at: systemClock())
        }
        // The data are the operator's alone (an agency's client list, the registrations, the
        // log): 0700 folders and 0600 files, whatever the umask or an earlier version left.
        let tightened = try PrivateFiles.restrictTree(configuration.dataDirectory)
        if tightened > 0 { EventLog.write("data_permissions_tightened", ["files": .number(String(tightened))]) }
        let adminToken: String
        (adminToken, adminTokenFile) = try AdminToken.resolve(configured: configuration.adminToken,
                                                              dataDirectory: configuration.dataDirectory)
        let clock = EndpointClock(manual: configuration.manualClock, system: systemClock)
        self.clock = clock
        let arrivals = Arrivals(dataDirectory: configuration.dataDirectory, clock: { clock.now() })
        self.arrivals = arrivals
        let context = HandlerContext(trustedProxies: configuration.trustedProxies.compactMap(AddressRange.init),
                                     rejections: RejectionLog(), metrics: EndpointMetrics(), clock: { clock.now() },
                                     served: ServedSites(Set(configuration.sites), developmentMode: configuration.developmentMode), arrivals: arrivals)

        // The log, and what replay rebuilds from it on the way: the trigger ledger, the postback
        // ledger, the verified tokens. The summary's checkpoint names the log prefix it was
        // built from; replay fingerprints the log there, so that it is checked without a second pass.
        let tokenKeys = try TokenKeyStore(path: configuration.tokenKeysPath, makesKeys: !configuration.cluster, servedSites: configuration.sites,
                                          foreignKeys: try configuration.resolvedTokenPublicKeys(), clock: { clock.now() },
                                          announce: { key in
                                              EventLog.write("token_key_created", ["site": .string(key.site), "key_id": .string(key.keyID),
                                                                                   "serves_from": .string(key.servesFrom.rfc3339)])
                                          }, makeKey: makeTokenKey)
        self.tokenKeys = tokenKeys
        if configuration.cluster, let site = tokenKeys.missingSites.first {
            throw EndpointConfiguration.ParseError(description: "--cluster: \(configuration.tokenKeysPath) has no token key for \(site). Every node must serve the same key: make it once with `attribution-endpoint token-keys add \(site) --file FILE` and give every node that file with --token-keys FILE (docs/DEPLOYMENT.md)")
        }
        tokenKeyRotation = configuration.tokenKeyRotationDays.map { days in
            TokenKeyRotation(days: days, keys: tokenKeys, clock: clock, announce: { key in
                EventLog.write("token_key_created", ["site": .string(key.site), "key_id": .string(key.keyID),
                                                     "serves_from": .string(key.servesFrom.rfc3339), "rotation": .bool(true)])
            })
        }
        let claimed = SummaryCheckpoint.claimedPrefix(atPath: configuration.dataDirectory + "/" + SummaryCheckpoint.fileName)
        let archive = try PostbackArchive(directory: configuration.dataDirectory + "/postback-keys")
        for path in archive.discarded { EventLog.write("postback_key_table_discarded", ["path": .string(path)]) }
        let keepTriggersFrom = SiteOwnerStore.oldestUseful(now: clock.now(), model: configuration.timingModel)
        let siteRules = SiteRules(developmentMode: configuration.developmentMode)
        // Before the log is read: which version of its app's schema a postback's value reads with
        // is counted as the Apps view's aggregates are rebuilt.
        let apps = try AppRegistryStore(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        func rebuilt() -> RecoveredState {
            let ledger = PostbackLedger(archive: archive)
            return RecoveredState(triggers: TriggerReplay(keepingFrom: keepTriggersFrom), ledger: ledger,
                                  tokens: TokenChecks(keys: tokenKeys, requireTokens: configuration.requireTokens, clock: { clock.now() }),
                                  apps: AppsAggregates(originOf: { ledger.origin(of: $0) },
                                                       schemaReading: { [apps] in apps.registry.schemaReading(appID: $0, window: $1) }))
        }
        // The sealed segments' digests, then only the log written since the last of them.
        let digestsDirectory = configuration.dataDirectory + "/digests"
        let turns = TurnRequester()
        self.turns = turns
        let recovered = try LogRecovery(
            dataDirectory: configuration.dataDirectory, digestsDirectory: digestsDirectory, archive: archive, rebuilt: rebuilt,
            openLog: { replayFrom, replaying in
                try RecordLog(directory: configuration.dataDirectory, committer: .owner,
                              preallocation: configuration.logPreallocationMB << 20,
                              segments: SegmentPolicy(maxBytes: configuration.logSegmentMB << 20), fingerprintAt: claimed?.end,
                              clock: { clock.now() }, replayFrom: replayFrom, replaying: replaying)
            },
            reportsFrom: { segments in
                RecoveredState.reportStateFrom(segments, triggersFrom: keepTriggersFrom, tokensFrom: tokenKeys.oldestVerifiableSignature)
            },
            makeOutbox: { store, inBackground in
                AppleAdsOutbox(store: store, client: AppleAdsClient(url: URL(string: configuration.appleAdsAPI)!,
                                                                   timeout: configuration.appleAdsTimeout,
                                                                   connections: AppleAdsOutbox.maxInFlight),
                               clock: clock, maxPending: configuration.appleAdsMaxPending, turns: turns,
                               digestsDirectory: digestsDirectory, replayInBackground: inBackground,
                               beforeReplay: beforeBackgroundRebuild)
            }).run()
        let (store, state, restored) = (recovered.store, recovered.state, recovered.restored)
        self.store = store
        appleAds = recovered.appleAds
        startedFromDigests = recovered.startedFromDigests
        postbackRebuild = PostbackRebuild(store: store, range: recovered.postbacksFrom.map { $0..<store.bytesOnDisk },
                                          take: { state.takeForPostbacks($0) }, beforeReading: beforeBackgroundRebuild)
        startSeconds = recovered.seconds
        let (ledger, tokenChecks) = (state.ledger, state.tokens)
        // A new log has nothing to rebuild: its summary is complete, and empty, from the start.
        let summary = SummaryStore(complete: store.bytesOnDisk == 0)
        checkpointer = SummaryCheckpointer(directory: configuration.dataDirectory, store: store, summary: summary,
                                           interval: configuration.summaryCheckpointInterval)
        summaryRebuild = SummaryRebuild(summary: summary, store: store, checkpointer: checkpointer, claimed: claimed)

        // The registrations.
        book = try SiteOwnerStore(dataDirectory: configuration.dataDirectory, model: configuration.timingModel,
                                  siteRules: siteRules, replayed: state.triggers.replayed, now: clock.now())
        // With --apple-ads-platform: the names of the Apple Ads ids seen, looked up in the background.
        if let file = configuration.appleAdsPlatformFile {
            let credentials = try AppleAdsPlatformCredentials.load(file: file)
            guard let api = URL(string: configuration.appleAdsPlatformAPI), let tokenURL = URL(string: configuration.appleAdsPlatformTokenURL) else {
                throw EndpointConfiguration.ParseError(description: "--apple-ads-platform-api and --apple-ads-platform-token-url must be URLs")
            }
            let client = AppleAdsPlatformClient(credentials: credentials, api: api, tokenURL: tokenURL, pace: configuration.appleAdsPlatformPace,
                                                clock: { clock.now() })
            let outbox = appleAds
            appleAdsNames = AppleAdsNameLookup(names: AppleAdsNames(dataDirectory: configuration.dataDirectory), client: client,
                                               seen: { outbox.isReady ? .init(outbox.summary(.init(site: nil, from: .min, to: .max))) : .init() }, clock: { clock.now() })
        } else {
            appleAdsNames = nil
        }
        let developmentPaths = try DevelopmentPathStore(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        let developmentPostbacks = try DevelopmentPostbacks(directory: configuration.dataDirectory + "/development",
                                                            knows: { [apps] id in id == 0 || apps.registry.app(id: id) != nil })
        self.developmentPostbacks = developmentPostbacks
        let advertisers = try AdvertiserRegistryStore(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        let relayBook = try RelayRegistryStore(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        let books = ConfiguredRegistrations.Books(sites: book, apps: apps, advertisers: advertisers, relays: relayBook)
        // A node already in the cluster takes the shared file as its reloads do, removals
        // included (it may have been down when they were made); a node joining for the first time
        // with registrations of its own is refused, naming them, rather than lose them silently.
        let member = ClusterMembership(dataDirectory: configuration.dataDirectory)
        let exact = configuration.cluster && member.isMember
        do {
            try ConfiguredRegistrations(configuration: configuration, servedSites: Set(configuration.sites), exact: exact, now: clock.now())
                .apply(to: books)
        } catch {
            throw EndpointConfiguration.ParseError(description: "config file \(configuration.configFile ?? ""): \(ConfiguredRegistrations.refusal(error))")
        }
        if configuration.cluster && !exact {
            try ConfiguredRegistrations.requireOnlyConfigured(configuration, sites: book, apps: apps, advertisers: advertisers,
                                                              relays: relayBook)
        }
        try member.record(configuration.cluster)
        let relays = try RelayService(store: store, node: configuration.node, dataDirectory: configuration.dataDirectory,
                                      registry: relayBook, timeout: configuration.relayTimeout, connections: configuration.relayConnections,
                                      deadAfter: configuration.relayDeadAfterDays * 86_400, clock: { clock.now() },
                                      retry: hooks.relayRetry,
                                      bypassing: [configuration.appleAdsAPI, configuration.clickhouse ?? ""].compactMap { URL(string: $0)?.host },
                                      observer: hooks.relayTurnEnded)
        self.relays = relays
        arrivals.knows { [configured = configuration.sites] in (configured, apps.registry.apps.map { String($0.appID) }) }
        // The admin token may do everything; viewer tokens (the `viewer-token` command) only read.
        let access = AccessControl(adminToken: adminToken, viewers: ViewerTokenStore(path: configuration.viewerTokensPath),
                                   advertisers: advertisers)
        self.access = access
        let scope: ScopeOf = { (request) throws(Problem) in try access.readScope(request) }
        configurationReload = ConfigurationReload(running: configuration, books: books, tokenKeys: tokenKeys, access: access,
                                                  now: { clock.now() }, relaysChanged: { relays.sync() })

        // The threads that work beside the event loop, and ask it for a turn when they are done.
        let checkThreads = configuration.signatureThreads ?? WorkerPool.allowedCores() - 1
        let postbackQueue = PostbackQueue(capacity: 4096)
        // One keyring for the workers and the loop: it remembers which key verified last.
        let keyring = try PostbackKeyring(testKeys: configuration.postbackKeys)
        let checks: any PostbackChecks = checkThreads > 0
            ? PostbackChecksOnWorkers(queue: postbackQueue, pool: WorkerPool(named: "signature-check", threads: checkThreads, priority: .background),
                                      keyring: keyring, ledger: ledger, store: store, turns: turns)
            : PostbackChecksOnTheLoop(queue: postbackQueue, ledger: ledger)
        let signingThreads = WorkerPool.allowedCores()
        signingPool = WorkerPool(named: "token-signing", threads: signingThreads, priority: .idle, maxWaiting: 64 * signingThreads)
        exportProducers = BodyProducers(named: "export", threads: min(2, max(1, WorkerPool.allowedCores() - 1)), maxStreams: 16)
        // The reads' threads, as the exports', in the idle class (`BodyProducers`): a summary
        // computed beside a steady load never holds the core when the loop wakes.
        readWorkers = WorkerPool(named: "reads", threads: min(2, max(1, WorkerPool.allowedCores() - 1)), priority: .idle, maxWaiting: 64)

        let postbackSchema = apps.postbackSchemaVersions
        let clickhouse = try configuration.resolvedClickHouse()
        // The cluster's summaries are read on a thread of their own, one query at a time.
        clusterScope = clickhouse.map { target in
            ClusterScope(client: ClickHouseClient(target: target), pool: WorkerPool(named: "cluster-summary", threads: 1, priority: .normal, maxWaiting: 8))
        }
        exporter = clickhouse.map { target in
            ClickHouseExporter(store: store, schema: ClickHouseTables.schema(postbackSchema: postbackSchema), client: ClickHouseClient(target: target),
                               node: configuration.node, dataDirectory: configuration.dataDirectory, clock: { clock.now() },
                               announce: { EventLog.write($0, $1) }, observer: hooks.exportTurnEnded)
        }

        let digests = try SegmentDigests(directory: digestsDirectory, owners: state.owners + [appleAds], store: store, restored: restored, clock: clock,
                                         announce: { EventLog.write($0, $1) })
        self.digests = digests
        let segmentSites = try SegmentSites(directory: configuration.dataDirectory + "/segment-sites", store: store,
                                            kinds: [.init(ReportExportCodec()), .init(PostbackExportCodec(ledger: ledger, schema: postbackSchema))])
        self.segmentSites = segmentSites
        let postbackWindow = PostbackWindow(days: configuration.postbackWindowDays, store: store, ledger: ledger, archive: archive,
                                            clock: clock, announce: { EventLog.write($0, $1) },
                                            onTableWritten: { digests.compact(base: $0.segmentBase) })
        self.postbackWindow = postbackWindow
        let checkpointer = self.checkpointer
        let exporter = self.exporter
        retention = configuration.retentionDays.map { days in
            LogRetention(days: days, store: store, clock: clock,
                         keptElsewhereThrough: {
                             min(checkpointer.writtenThrough, exporter?.exportedThrough ?? .max, postbackWindow.tabledThrough,
                                 digests.digestedThrough)
                         },
                         announce: { EventLog.write($0, $1) })
        }

        // Each surface's series for `/metrics`, in the order they are written.
        var metricsSources: [any MetricsSource] = [tokenChecks, TokenKeyMetrics(keys: tokenKeys, rotation: tokenKeyRotation),
                                                   LogSegmentMetrics(store: store, retention: retention, digests: digests),
                                                   PostbackWindowMetrics(window: postbackWindow, rebuild: postbackRebuild),
                                                   appleAds, state.apps]
        var exportHealth: (@Sendable () -> ClickHouseExporter.Status)?
        if let exporter {
            metricsSources.append(ClickHouseExportMetrics(exporter: exporter))
            exportHealth = { exporter.status }
        }
        metricsSources.append(book)
        metricsSources.append(RelayMetrics(service: relays))
        metricsSources.append(DataDiskMetrics(dataDirectory: configuration.dataDirectory))
        let responses = ResponseCounts()
        metricsSources.append(ResponseMetrics(responses: responses))

        // The surfaces, and the route table they make.
        let reports = ReportHandler(validator: PCMReportValidator(siteRules: siteRules, sites: RememberedSiteChecks(siteRules)),
                                    roles: RoleResolver(served: context.served),
                                    maxReportBytes: configuration.maxReportBytes, store: store, book: book, summary: summary,
                                    tokens: tokenChecks, context: context)
        postbacks = PostbackHandler(checks: checks, keyring: keyring, ledger: ledger, aggregates: state.apps, rebuild: postbackRebuild,
                                    developmentMode: configuration.developmentMode,
                                    maxPostbackBytes: configuration.maxPostbackBytes, store: store, context: context,
                                    development: developmentPostbacks)
        let bearer = access.gate()
        // In a cluster, what every node must agree on comes from the files they share.
        let registrationGate = configuration.cluster ? ClusterMode.registrationGate(bearer) : bearer
        // The one context every surface's routes are built from: the handlers' own, with what a
        // token may read, the threads reads run on, the cluster, and how far back records are kept.
        var shared = context
        shared.scope = scope
        shared.reads = readWorkers
        shared.cluster = clusterScope
        shared.recordsKeptFrom = { [store] in store.hasRemovedSegments ? store.oldestRecordTime : nil }
        let spend = try SpendStore(dataDirectory: configuration.dataDirectory, siteRules: siteRules)
        let marketers = MarketerRoutes(context: shared, servedSites: configuration.sites, advertisers: advertisers, access: access,
                                       arrivals: arrivals, apps: apps, clusterMode: configuration.cluster)
        let surfaces = PCMRoutes(reports: reports,
                                 triggers: TriggerHandler(book: book, store: store, context: context),
                                 tokens: TokenSigning(keys: tokenKeys, pool: signingPool, context: context)).routes
            + AppRoutes(postbacks: postbacks).routes
            + AppRegistrationRoutes(context: shared, book: apps, registered: { app in
                arrivals.know(sites: [], apps: [String(app.appID)], now: clock.now())
            }).routes(bearer: registrationGate)
            + AppsSummaryRoutes(context: shared, aggregates: state.apps, rebuild: postbackRebuild, book: apps, appleAds: appleAds,
                                names: appleAdsNames?.names, spend: spend).routes(bearer: bearer)
            + PostbackInspectionRoutes(context: shared, keyring: keyring, ledger: ledger, store: store, book: apps,
                                       developmentMode: configuration.developmentMode, maxBytes: configuration.maxPostbackBytes)
                .routes(bearer: bearer)
            + DevelopmentPathRoutes(context: shared, paths: developmentPaths, apps: apps, postbacks: developmentPostbacks, keyring: keyring,
                                    store: store, turns: turns, maxPostbackBytes: configuration.maxPostbackBytes)
                .routes(admin: registrationGate)
            + AppleAdsNamesRoutes(context: shared, lookup: appleAdsNames).routes(bearer: bearer)
            + SetupRoutes(context: shared, access: access, apps: apps, paths: developmentPaths, development: developmentPostbacks,
                          appleAds: appleAds, keyring: keyring, ledger: ledger, store: store, developmentMode: configuration.developmentMode)
                .routes(bearer: bearer)
            // Checking a plist changes nothing: a viewer token may.
            + PlistCheckRoutes(context: shared).routes(bearer: access.gate(viewersMay: ["POST", "GET", "HEAD"]))
            + ConversionValueRoutes(book: apps, context: context).routes
            + AppleAdsRoutes(outbox: appleAds, context: context).routes
            + SiteOwnerRoutes(context: shared, book: book).routes(bearer: registrationGate)
            + RelayRoutes(context: shared, book: relayBook, apps: apps, service: relays, allowHTTP: configuration.relayAllowHTTP)
                .routes(bearer: bearer, registrationGate: registrationGate)
            + TokenKeyRoutes(context: shared, keys: tokenKeys, pool: signingPool, rotation: tokenKeyRotation).routes(bearer: registrationGate)
            + SummaryRoutes(context: shared, summary: summary, book: book).routes(bearer: bearer)
            + marketers.routes(bearer: bearer, registrationGate: registrationGate)
            // Any token reaches it; `SpendRoutes` says whose spend each may change.
            + SpendRoutes(context: shared, spend: spend, apps: apps, access: access).routes(gate: configuration.cluster
                ? ClusterMode.spendGate(access.gate(viewersMay: ["GET", "HEAD", "POST", "DELETE"]))
                : access.gate(viewersMay: ["GET", "HEAD", "POST", "DELETE"]))
            + OverviewRoutes(context: shared, summary: summary, aggregates: state.apps, rebuild: postbackRebuild, appleAds: appleAds, apps: apps,
                             access: access, names: appleAdsNames?.names).routes(bearer: bearer)
            + ExportRoutes(context: shared, store: store, ledger: ledger, postbackRebuild: postbackRebuild, appleAds: appleAds, apps: apps,
                           names: appleAdsNames?.names, producers: exportProducers, segmentSites: segmentSites).routes(bearer: bearer)
            + OperationsRoutes(context: shared, node: configuration.node, store: store, clock: clock, sources: metricsSources,
                               exportHealth: exportHealth, arrivals: { marketers.report($0) }).routes(bearer: bearer)
        routes = EndpointRoutes(surfaces: surfaces, store: store, publicDirectory: publicDirectory, checkpointer: checkpointer,
                                    postbacks: postbacks, context: context)

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
        self.http = HTTPServer(configuration: http, handler: routes, responses: responses)
    }

    /// Starts listening; returns the bound port.
    @discardableResult
    public func start() throws -> UInt16 {
        let replay = store.replay
        EventLog.write("replay", [
            // "records" counts the reports, as operators' tools read it; the other kinds replay with them.
            "log": .string(store.logPath), "records": .number(String(replay.count(of: .report))),
            "corrupt_records": .number(String(replay.corruptRecords.count)),
            "corrupt_offsets": .array(replay.corruptRecords.map { .number(String($0.offset)) }),
            "torn_tail_bytes": .number(String(replay.tornTailBytes)),
            "seconds": .number(String(format: "%.3f", replay.seconds)),
            // Sealed segments taken from their digests; records read are those after them.
            "digested_segments": .number(String(startedFromDigests)), "records_read": .number(String(replay.recordsRead)),
            "digests_seconds": .number(String(format: "%.3f", startSeconds["digests"] ?? 0)),
            "apple_ads_seconds": .number(String(format: "%.3f", startSeconds["apple_ads"] ?? 0)),
        ])
        let services = makeServices()
        self.services.withLock { $0 = services }
        try services.start()
        guard let port = http.port else { throw ServiceGroup.Stopped() }
        var fields: [(String, JSONValue)] = [
            ("address", .string("\(configuration.host):\(port)")), ("node", .string(configuration.node)),
            ("data", .string(configuration.dataDirectory)),
            ("sites", .array(configuration.sites.map { .string($0) })), ("dev", .bool(configuration.developmentMode)),
            ("manual_clock", .bool(configuration.manualClock)), ("triggers", .number(String(book.triggerCount))),
            // Where the summary page comes from; null only with --no-page.
            ("page", publicDirectory.map { .string($0) } ?? .null),
        ]
        // Whether URLSession's host check is the endpoint's, without the leak (`url_host_check.c`):
        // "foundation" means the executable lost its export, and every Apple Ads call leaks again.
        let hostCheck = ["none", "endpoint", "foundation"][Int(min(2, max(0, c_system_shims_url_host_check_binding())))]
        fields.append(("url_host_check", .string(hostCheck)))
        if let exporter { fields.append(("clickhouse", .string(exporter.status.target))) }
        if let adminTokenFile { fields.append(("admin_token_file", .string(adminTokenFile))) }
        // The keys each site serves now; a site without one yet logs `token_key_created` when it is made.
        fields.append(("token_keys", .object(configuration.sites.compactMap { site in
            tokenKeys.servedKey(for: site).map { JSONMember(key: site, value: .string($0.keyID)) }
        })))
        EventLog.write("listening", fields)
        return port
    }

    /// What runs, in the order it starts (`ServiceGroup` stops it in the reverse order): the
    /// listener starts last, once everything it hands requests to runs, and stops first; the log,
    /// which every other service reads or writes, closes last, and the summary's checkpoint after
    /// it. Pools made with the server (their threads start in `init`) are listed for their stop.
    private func makeServices() -> ServiceGroup {
        let (store, checkpointer, clusterScope, arrivals, heapTrim) = (self.store, self.checkpointer, self.clusterScope, self.arrivals, self.heapTrim)
        let (digests, postbackWindow, retention, segmentSites) = (self.digests, self.postbackWindow, self.retention, self.segmentSites)
        let (exporter, postbackRebuild, summaryRebuild, tokenKeys, tokenKeyRotation) = (self.exporter, self.postbackRebuild, self.summaryRebuild, self.tokenKeys, self.tokenKeyRotation)
        let (readWorkers, exportProducers, signingPool, postbacks, appleAds) = (self.readWorkers, self.exportProducers, self.signingPool, self.postbacks, self.appleAds)
        let (http, turns, relays, development, appleAdsNames) = (self.http, self.turns, self.relays, self.developmentPostbacks, self.appleAdsNames)
        return ServiceGroup([
            Service("summary-checkpoint", stop: { checkpointer.finish() }),
            Service("log", stop: { store.close() }),
            // Before any thread that may ask the loop for a turn starts: one asked before the loop
            // runs is kept by the HTTP server and taken in its first turn.
            Service("turn-requests", start: { turns.connect { http.requestTurn() } }),
            // The query in flight is cancelled first: the worker would otherwise wait out its time-out.
            Service("cluster-summary", stop: { clusterScope?.client.stop(); clusterScope?.pool.stop() }),
            Service("arrivals", start: { arrivals.start() }, stop: { arrivals.stopAndSave() }),
            // The setup view's notes of development postbacks: each on disk before the stop ends.
            Service("development-postbacks", stop: { development.drain() }),
            Service("apple-ads-names", start: { appleAdsNames?.start() }, stop: { appleAdsNames?.stopLookups() }),
            Service("heap-trim", start: { heapTrim.start() }, stop: { heapTrim.stop() }),
            // These four need the postback ledger whole, or must not remove a segment its rebuild
            // still reads: the rebuild starts them when it is done.
            Service("postback-window", stop: { postbackWindow.stop() }),
            Service("segment-sites", stop: { segmentSites.stop() }),
            Service("segment-digests", stop: { digests.stop() }),
            Service("log-retention", stop: { retention?.stop() }),
            // What it had not sent goes after the restart.
            Service("clickhouse-export", start: { exporter?.start() }, stop: { exporter?.stop() }),
            // Each destination's copies since its cursor; what it had not taken goes after the restart.
            Service("relays", start: { relays.start() }, stop: { relays.stop() }),
            Service("postback-rebuild", start: {
                postbackRebuild.start {
                    digests.start()
                    segmentSites.start()
                    postbackWindow.start()
                    retention?.start()
                }
            }, stop: { postbackRebuild.stop() }),
            Service("summary-rebuild", start: { summaryRebuild.start() }, stop: { summaryRebuild.stop() }),
            // Keys first made before the first request, so that one asking for a key still being
            // made waits for it. The rotation is told to stop before the keys are, since it may
            // wait for them, and joined after.
            Service("token-keys", start: {
                tokenKeys.generateMissing()
                tokenKeyRotation?.start()
            }, stop: {
                tokenKeyRotation?.requestStop()
                tokenKeys.stop()
                tokenKeyRotation?.stop()
            }),
            Service("reads", stop: { readWorkers.stop() }),
            Service("exports", stop: { exportProducers.stop() }),
            Service("token-signing", stop: { signingPool.stop() }),
            Service("postback-checks", stop: { postbacks.stop() }),
            Service("apple-ads-calls", start: { appleAds.start() }, stop: { appleAds.stop() }),
            // Stopped by `shutdown` (a signal); its stop waits for the requests in flight.
            Service("listener", start: { try http.start() }, stop: { http.waitUntilStopped() }),
        ])
    }

    /// Reads the configuration again with `parse` and applies what can be applied live
    /// (`ConfigurationReload`); the running configuration stays if it is refused.
    @discardableResult
    func reload(_ parse: () throws -> EndpointConfiguration) -> ConfigurationReload.Outcome {
        configurationReload.reload(parse)
    }

    /// Triggers a report may still use, held in memory.
    var triggerCount: Int { book.triggerCount }

    /// Stops accepting connections and lets requests in flight finish. Returns at once.
    public func shutdown() {
        http.shutdown()
    }

    /// Waits for the HTTP server to stop, then stops the rest, in the reverse of their start.
    public func waitUntilStopped() {
        services.withLock { $0 }?.stop()
        EventLog.write("stopped", ["reports": .number(String(store.count(of: .report)))])
    }
}
