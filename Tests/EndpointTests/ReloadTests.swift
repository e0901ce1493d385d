import DurableFiles
import Foundation
import Primitives
import Testing
@testable import Endpoint

/// A reload (SIGHUP): the config file and the shared files read again; what can change live
/// changes, the rest is named with why it waits for a restart, and a broken file changes nothing.
@Suite struct ReloadTests {
    static let admin = [("Authorization", "Bearer test-token"), ("Content-Type", "application/json")]
    static let sites = #""sites":["news.example","shop.example"]"#
    static let purchase = #"{"site":"shop.example","name":"Purchase","trigger_data":5,"priority":1}"#
    static let winter = #"{"source_site":"news.example","name":"Winter","source_id":42,"destination":"shop.example","starts_at":"2026-11-01T00:00:00Z"}"#

    /// A node started from a config file, and the parse a SIGHUP would run: the same command line
    /// over the file as it is at the time.
    struct Node {
        let endpoint: LiveEndpoint
        let file: String
        let arguments: [String]

        init(_ json: String, token: [String] = ["--token", "test-token"], directory: String = temporaryDirectory()) throws {
            file = temporaryDirectory() + "/config.json"
            try Data(json.utf8).write(to: URL(fileURLWithPath: file))
            let arguments = ["--config", file, "--data", directory, "--port", "0", "--no-access-log",
                             "--public", repositoryRoot + "/Public"] + token
            self.arguments = arguments
            endpoint = try LiveEndpoint(directory: directory) { configuration in
                configuration = try! Node.parse(arguments)
            }
        }

        static func parse(_ arguments: [String]) throws -> EndpointConfiguration {
            guard case .run(let configuration) = try EndpointConfiguration.parse(arguments: arguments, environment: [:]) else {
                throw EndpointConfiguration.ParseError(description: "help")
            }
            return configuration
        }

        func write(_ json: String) throws { try Data(json.utf8).write(to: URL(fileURLWithPath: file)) }

        @discardableResult
        func reload() -> ConfigurationReload.Outcome {
            endpoint.server.reload { try Node.parse(arguments) }
        }

        /// What the admin API lists: a registration made live shows here at once.
        var registrations: String {
            ["/api/conversions", "/api/campaigns", "/api/apps", "/api/advertisers", "/api/relays"]
                .map { (try? endpoint.get($0).bodyText) ?? "?" }.joined(separator: "\n")
        }
    }

    @Test func aReloadAppliesTheFilesRegistrationsAndNamesWhatWaitsForARestart() throws {
        let node = try Node("{\(Self.sites),\"conversions\":[\(Self.purchase)]}")
        defer { node.endpoint.stop() }
        #expect(try !node.endpoint.get("/api/campaigns").bodyText.contains("Winter"))
        try node.write("{\(Self.sites),\"conversions\":[\(Self.purchase)],\"campaigns\":[\(Self.winter)],\"max_connections\":10,\"apps\":[{\"app_id\":7,\"name\":\"Puzzle\",\"site\":\"shop.example\"}]}")
        let outcome = node.reload()
        #expect(outcome.refused == nil)
        #expect(outcome.applied == ["site registrations", "app registrations"])
        #expect(outcome.needsRestart.map(\.option) == [#"--max-connections ("max_connections" in the config file)"#])
        #expect(try node.endpoint.get("/api/campaigns").bodyText.contains("Winter"))
        #expect(try node.endpoint.get("/api/apps").bodyText.contains("\"app_id\":7"))

        // Nothing new: nothing applied, and what still waits is still named.
        let again = node.reload()
        #expect(again.applied.isEmpty)
        #expect(again.needsRestart.count == 1)

        // A campaign's end is changed in the file, then it is taken out: outside a cluster the file
        // adds and changes, as a start does, and never removes what the admin API may have added.
        try node.write("{\(Self.sites),\"conversions\":[\(Self.purchase)],\"campaigns\":[\(Self.winter.dropLast()),\"ends_at\":\"2026-12-01T00:00:00Z\"}]}")
        #expect(node.reload().applied == ["site registrations"])
        #expect(try node.endpoint.get("/api/campaigns").bodyText.contains("2026-12-01T00:00:00"))
        try node.write("{\(Self.sites)}")
        #expect(node.reload().applied.isEmpty)
        #expect(try node.endpoint.get("/api/campaigns").bodyText.contains("Winter"))
    }

    /// Every kind of broken file: refused whole, with where it is wrong; the registrations stay as
    /// they were, and the next good file is taken.
    @Test(arguments: [
        ("{\"sites\":[\"news.example\",", "not valid JSON"),
        ("", "not valid JSON"),
        ("[]", "not a JSON object"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"frobnicate\":1}", "unknown key \"frobnicate\""),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"max_connections\":\"many\"}", "max_connections"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"max_connections\":0}", "--max-connections"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"sites\":[\"other.example\"]}", "duplicate object key"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"campaigns\":[{\"source_site\":\"news.example\",\"name\":\"X\",\"source_id\":300,\"destination\":\"shop.example\"}]}", "source_id"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"campaigns\":[{\"source_site\":\"elsewhere.example\",\"name\":\"X\",\"source_id\":1,\"destination\":\"shop.example\",\"starts_at\":\"2026-11-01T00:00:00Z\"}]}", "campaigns[0].source_site names elsewhere.example, which this endpoint does not serve"),
        // The running campaign's id changed: which reports are its cannot change.
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"campaigns\":[{\"source_site\":\"news.example\",\"name\":\"Winter\",\"source_id\":43,\"destination\":\"shop.example\",\"starts_at\":\"2026-11-01T00:00:00Z\"}]}", "campaigns[0].source_id cannot change"),
        // A second campaign on the running one's id, while it is busy.
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"campaigns\":[\(winter),{\"source_site\":\"news.example\",\"name\":\"Spring\",\"source_id\":42,\"destination\":\"shop.example\",\"starts_at\":\"2026-11-10T00:00:00Z\"}]}", "campaigns[1].source_id: source id 42"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"conversions\":[{\"site\":\"shop.example\",\"name\":\"Big\",\"trigger_data\":16}]}", "0–15"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"apps\":[{\"app_id\":7,\"name\":\"Puzzle\",\"site\":\"nowhere.example\"}]}", "apps[0].site names nowhere.example"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"advertisers\":[{\"id\":\"acme\",\"name\":\"Acme\",\"sites\":[\"elsewhere.example\"]}]}", "advertisers[0].sites[0] names elsewhere.example"),
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"relays\":[{\"name\":\"mmp\",\"url\":\"ftp://mmp.example/\",\"site\":\"shop.example\",\"protocols\":[\"skadnetwork\"]}]}", "ftp"),
        // A new site with its campaign: the site waits for a restart, so the campaign must.
        ("{\"sites\":[\"news.example\",\"shop.example\",\"blog.example\"],\"campaigns\":[{\"source_site\":\"blog.example\",\"name\":\"B\",\"source_id\":1,\"destination\":\"shop.example\",\"starts_at\":\"2026-11-01T00:00:00Z\"}]}", "a new site is served only after a restart"),
        // --relay-allow-http in the file waits for a restart: a plain http:// relay is judged by what runs.
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"relay_allow_http\":true,\"relays\":[{\"name\":\"c\",\"url\":\"http://collector.example/copies\",\"site\":\"shop.example\",\"protocols\":[\"skadnetwork\"]}]}", "relays[0].url"),
        // Good registrations beside a bad one: none of them is taken.
        ("{\"sites\":[\"news.example\",\"shop.example\"],\"conversions\":[\(purchase),{\"site\":\"shop.example\",\"name\":\"Signup\",\"trigger_data\":3}],\"apps\":[{\"app_id\":7,\"name\":\"Puzzle\",\"site\":\"shop.example\"},{\"app_id\":-1,\"name\":\"Bad\",\"site\":\"shop.example\"}]}", "app_id"),
    ])
    func aBrokenFileChangesNothingAndSaysWhere(broken: String, named: String) throws {
        let node = try Node("{\(Self.sites),\"conversions\":[\(Self.purchase)],\"campaigns\":[\(Self.winter)]}")
        defer { node.endpoint.stop() }
        let before = node.registrations
        try node.write(broken)
        let outcome = node.reload()
        #expect(outcome.refused?.contains(named) == true, "\(broken): \(outcome.refused ?? "taken")")
        #expect(outcome.applied.isEmpty)
        #expect(node.registrations == before)
        try node.write("{\(Self.sites),\"conversions\":[\(Self.purchase),{\"site\":\"shop.example\",\"name\":\"Signup\",\"trigger_data\":3}],\"campaigns\":[\(Self.winter)]}")
        #expect(node.reload().applied == ["site registrations"])
        #expect(node.registrations.contains("Signup"))
    }

    /// A relay the file spells otherwise than the registry keeps it (host case, default port) is
    /// no change: a reload after it applies nothing and leaves its deliveries alone.
    @Test func aRelaySpelledOtherwiseIsNoChange() throws {
        let relay = #"{"name":"mmp","url":"https://MMP.example:443/copies","app_id":7,"protocols":["skadnetwork","adattributionkit"]}"#
        let file = "{\(Self.sites),\"apps\":[{\"app_id\":7,\"name\":\"Puzzle\",\"site\":\"shop.example\"}],\"relays\":[\(relay)]}"
        let node = try Node("{\(Self.sites)}")
        defer { node.endpoint.stop() }
        try node.write(file)
        #expect(node.reload().applied == ["app registrations", "relays"])
        #expect(node.reload().applied == [])
        #expect(try node.endpoint.get("/api/relays").bodyText.contains("https://mmp.example/copies"))
    }

    /// A registry that cannot be saved after the check passed (here apps.json turned into a
    /// folder): what was saved before it is named in the refusal, not hidden.
    @Test func aRegistryThatCannotBeSavedNamesWhatWasSavedBeforeIt() throws {
        let node = try Node("{\(Self.sites)}")
        defer { node.endpoint.stop() }
        let apps = node.endpoint.directory + "/apps.json"
        try? FileManager.default.removeItem(atPath: apps)
        try FileManager.default.createDirectory(atPath: apps, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: apps + "/keep", withIntermediateDirectories: false)
        try node.write("{\(Self.sites),\"campaigns\":[\(Self.winter)],\"apps\":[{\"app_id\":7,\"name\":\"Puzzle\",\"site\":\"shop.example\"}]}")
        let outcome = node.reload()
        #expect(outcome.applied == ["site registrations"])
        #expect(outcome.refused?.contains("could not be saved") == true, "\(outcome.refused ?? "taken")")
        #expect(try node.endpoint.get("/api/campaigns").bodyText.contains("Winter"))
    }

    @Test func aMissingOrUnreadableFileChangesNothing() throws {
        let node = try Node("{\(Self.sites),\"conversions\":[\(Self.purchase)]}")
        defer { node.endpoint.stop() }
        try FileManager.default.removeItem(atPath: node.file)
        #expect(node.reload().refused?.contains("cannot read config file") == true)
        try node.write("{\(Self.sites)}")
        chmod(node.file, 0)
        if getuid() != 0 { #expect(node.reload().refused?.contains("cannot read config file") == true) }
        #expect(node.registrations.contains("Purchase"))
    }

    /// In a cluster the file is the only source: what it no longer holds goes, and a key added to
    /// the shared key file (a rotation) is served from its time on every node without a restart.
    @Test func inAClusterAReloadRemovesWhatTheFileDropsAndTakesNewSharedKeys() throws {
        let keyFolder = temporaryDirectory()
        try TestTokenKeys.seed(keyFolder, sites: ["news.example", "shop.example"])
        let keys = keyFolder + "/" + TokenKeyStore.fileName
        let node = try Node("{\(Self.sites),\"cluster\":true,\"viewer_tokens\":\"\(keyFolder)/viewer-tokens.json\",\"token_keys\":\"\(keys)\",\"conversions\":[\(Self.purchase)],\"campaigns\":[\(Self.winter)]}")
        defer { node.endpoint.stop() }
        let keyPath = "/.well-known/private-click-measurement/get-token-public-key/"
        let served = node.endpoint.request("GET", keyPath, host: "news.example").bodyText

        try node.write("{\(Self.sites),\"cluster\":true,\"viewer_tokens\":\"\(keyFolder)/viewer-tokens.json\",\"token_keys\":\"\(keys)\",\"conversions\":[\(Self.purchase)]}")
        // The successor, as `token-keys add --serves-from` writes it.
        var file = try DurableJSONFile(path: keys, empty: TokenKeyStore.File(), mode: 0o600).load()
        let successor = TestTokenKeys.spare()
        file.keys.append(.init(site: "news.example", privateKey: Data(successor.derRepresentation).base64EncodedString(),
                               createdAt: Timestamp(rfc3339: "2026-11-20T10:00:00Z")!, servesFrom: Timestamp(rfc3339: "2026-11-21T00:00:00Z")!))
        try DurableJSONFile(path: keys, empty: TokenKeyStore.File(), mode: 0o600).save(file)

        let outcome = node.reload()
        #expect(outcome.applied == ["site registrations", "token keys"])
        #expect(try !node.endpoint.get("/api/campaigns").bodyText.contains("Winter"))
        #expect(node.endpoint.request("GET", keyPath, host: "news.example").bodyText == served)

        // `token-keys add` again before the first took over replaces it in the file: the node must
        // drop the successor no other node has, and switch at the new time to the new one.
        file.keys.removeLast()
        let replacement = TestTokenKeys.spare()
        file.keys.append(.init(site: "news.example", privateKey: Data(replacement.derRepresentation).base64EncodedString(),
                               createdAt: Timestamp(rfc3339: "2026-11-20T10:00:00Z")!, servesFrom: Timestamp(rfc3339: "2026-11-22T00:00:00Z")!))
        try DurableJSONFile(path: keys, empty: TokenKeyStore.File(), mode: 0o600).save(file)
        #expect(node.reload().applied == ["token keys"])
        node.endpoint.clock.set("2026-11-21T00:00:01Z")
        #expect(node.endpoint.request("GET", keyPath, host: "news.example").bodyText == served)
        node.endpoint.clock.set("2026-11-22T00:00:01Z")
        let next = node.endpoint.request("GET", keyPath, host: "news.example").bodyText
        #expect(next != served && next.contains(Base64URL.encode(replacement.publicKey.subjectPublicKeyInfo)))
        #expect(!next.contains(Base64URL.encode(successor.publicKey.subjectPublicKeyInfo)))

        // A broken key file changes nothing, registrations included.
        try Data("{".utf8).write(to: URL(fileURLWithPath: keys))
        try node.write("{\(Self.sites),\"cluster\":true,\"viewer_tokens\":\"\(keyFolder)/viewer-tokens.json\",\"token_keys\":\"\(keys)\"}")
        let refused = node.reload()
        #expect(refused.refused?.contains(keys) == true)
        #expect(try node.endpoint.get("/api/conversions").bodyText.contains("Purchase"))
    }

    @Test func aNewTokenInTheTokenFileReplacesTheAdminTokenAtOnce() throws {
        let folder = temporaryDirectory()
        let tokenFile = folder + "/admin-token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data("first-token\n".utf8), attributes: [.posixPermissions: 0o600]))
        let node = try Node("{\(Self.sites),\"token_file\":\"\(tokenFile)\"}", token: [])
        defer { node.endpoint.stop() }
        let endpoint = node.endpoint
        #expect(try endpoint.get("/api/campaigns", token: "first-token").status == 200)
        try Data("second-token\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        let outcome = node.reload()
        #expect(outcome.applied == ["admin token"])
        #expect(outcome.needsRestart.isEmpty)
        #expect(try endpoint.get("/api/campaigns", token: "first-token").status == 401)
        #expect(try endpoint.get("/api/campaigns", token: "second-token").status == 200)
        #expect(endpoint.server.adminToken == "second-token")
        // A token file others may read is refused, as at start, and the token stays.
        chmod(tokenFile, 0o644)
        #expect(node.reload().refused?.contains("token") == true)
        #expect(try endpoint.get("/api/campaigns", token: "second-token").status == 200)
    }

    @Test func aGivenTokenRetiresTheOneTheNodeMadeAndRotateTokenKeyFindsItThroughTheConfig() throws {
        let directory = temporaryDirectory()
        let node = try Node("{\(Self.sites)}", token: [], directory: directory)
        let madePath = directory + "/" + AdminToken.fileName
        let made = try String(contentsOfFile: madePath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try node.endpoint.get("/api/campaigns", token: made).status == 200)
        let tokenFile = temporaryDirectory() + "/token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data("given-token\n".utf8), attributes: [.posixPermissions: 0o600]))
        try node.write("{\(Self.sites),\"token_file\":\"\(tokenFile)\"}")
        #expect(node.reload().applied.contains("admin token"))
        #expect(try node.endpoint.get("/api/campaigns", token: made).status == 401)
        // The made token opens nothing now: its file is gone, so no tool takes it.
        #expect(!FileManager.default.fileExists(atPath: madePath))
        let status = RotateTokenKeyCommand.main(arguments: ["shop.example", "--config", node.file, "--port", String(node.endpoint.port)],
                                                environment: [:])
        #expect(status == 0)
        #expect(try node.endpoint.get("/api/token-keys", token: "given-token").bodyText.components(separatedBy: "shop.example").count > 2)
        node.endpoint.stop()

        // At a start too: a node given a token removes the one it had made.
        #expect(FileManager.default.createFile(atPath: madePath, contents: Data("stale\n".utf8), attributes: [.posixPermissions: 0o600]))
        let restarted = try LiveEndpoint(directory: directory)
        restarted.stop()
        #expect(!FileManager.default.fileExists(atPath: madePath))
    }

    /// What a reload applies must become the running configuration, or the next reload would
    /// apply it again and name it as changed: every option declared live is taken.
    @Test func everyLiveOptionIsTakenIntoTheRunningConfiguration() {
        let live = EndpointConfiguration.options.filter { if case .live = $0.reload { true } else { false } }
        #expect(live.count >= 8)
        for option in live {
            // `--token` has no config-file key: the reload's admin-token step applies it.
            guard let key = option.key else {
                #expect(option.flag == "--token")
                continue
            }
            var configuration = EndpointConfiguration()
            let taken = configuration.takeLive(key, from: EndpointConfiguration())
            #expect(taken, "\(option.name)")
        }
    }
}
