import DurableFiles
import Foundation
import Primitives
import SiteOwners
import Testing
@testable import Endpoint

/// `--cluster`: what every node must agree on comes from the files they share. The admin API
/// reads but never changes registrations or keys; nodes given the same key file serve the same
/// key bytes, and a rotation in it takes over on all of them at the same instant.
@Suite struct ClusterModeTests {
    static let admin = [("Authorization", "Bearer test-token"), ("Content-Type", "application/json")]
    static let keyPath = "/.well-known/private-click-measurement/get-token-public-key/"

    /// A key file holding the test keys of `sites`, outside any node's data directory.
    func sharedKeyFile(_ sites: [String]) throws -> String {
        let folder = temporaryDirectory()
        try TestTokenKeys.seed(folder, sites: sites)
        return folder + "/" + TokenKeyStore.fileName
    }

    @Test func theAdminAPIReadsRegistrationsButChangesNoneAndSaysWhy() throws {
        let keys = try sharedKeyFile(["news.example", "shop.example"])
        let node = try LiveEndpoint { configuration in
            configuration.cluster = true
            configuration.viewerTokens = temporaryDirectory() + "/viewer-tokens.json"
            configuration.tokenKeys = keys
            configuration.conversions = [Conversion(site: "shop.example", name: "Purchase", triggerData: 5, priority: 1)]
        }
        defer { node.stop() }
        let writes: [(String, String, String)] = [
            ("POST", "/api/conversions", #"{"site":"shop.example","name":"Signup","trigger_data":3}"#),
            ("DELETE", "/api/conversions?site=shop.example&name=Purchase", ""),
            ("POST", "/api/campaigns", #"{"source_site":"news.example","name":"Winter","source_id":42}"#),
            ("POST", "/api/apps", #"{"app_id":1,"site":"shop.example"}"#),
            ("DELETE", "/api/ad-networks?id=x.skadnetwork", ""),
            ("POST", "/api/apple-ads/campaigns", #"{"campaign_id":1,"name":"x"}"#),
            ("POST", "/api/token-keys", #"{"site":"shop.example"}"#),
        ]
        for (method, path, body) in writes {
            let response = node.request(method, path, headers: Self.admin, body: Array(body.utf8))
            #expect(response.status == 409, "\(method) \(path)")
            #expect(json(response)["rule"] as? String == "registrations_are_shared", "\(method) \(path)")
            #expect((json(response)["detail"] as? String)?.contains("--cluster") == true)
        }
        // Without the token, still 401: the gate's first question is who asks.
        #expect(node.request("POST", "/api/conversions", body: Array(writes[0].2.utf8)).status == 401)
        let listed = try node.get("/api/conversions")
        #expect(listed.status == 200)
        #expect(listed.bodyText.contains("Purchase") && !listed.bodyText.contains("Signup"))
        #expect(try node.get("/api/token-keys").status == 200)
    }

    /// One admin token and one set of viewer tokens for every node: a node that would make a token
    /// of its own does not start, and a viewer token from the shared file works on every node.
    @Test func everyNodeTakesTheSameAdminAndViewerTokens() throws {
        let keys = try sharedKeyFile(["news.example", "shop.example"])
        let folder = temporaryDirectory()
        let viewers = folder + "/viewer-tokens.json"
        let base = ["--cluster", "--site", "news.example", "--site", "shop.example", "--token-keys", keys, "--data", temporaryDirectory()]
        #expect {
            try EndpointConfiguration.parse(arguments: base + ["--viewer-tokens", viewers], environment: [:])
        } throws: { "\($0)".contains("same admin token") && "\($0)".contains("--token-file") }
        #expect {
            try EndpointConfiguration.parse(arguments: base, environment: [EndpointConfiguration.environmentTokenName: "t"])
        } throws: { "\($0)".contains("same viewer tokens") && "\($0)".contains("--viewer-tokens") }
        #expect(throws: Never.self) {
            try EndpointConfiguration.parse(arguments: base + ["--viewer-tokens", viewers], environment: [EndpointConfiguration.environmentTokenName: "t"])
        }

        let nodes = try (0..<2).map { _ in
            try LiveEndpoint { configuration in
                configuration.cluster = true
                configuration.viewerTokens = viewers
                configuration.tokenKeys = keys
            }
        }
        defer { nodes.forEach { $0.stop() } }
        let (record, token) = try ViewerTokenStore(path: viewers).create(label: "Acme's dashboard", advertiser: nil, now: .init(millisecondsSinceEpoch: 0))
        for node in nodes {
            #expect(try node.get("/api/summary", token: token).status == 200)
            #expect(try node.get("/api/whoami", token: "test-token").status == 200)
        }
        #expect(try ViewerTokenStore(path: viewers).revoke(id: record.id))
        for node in nodes { #expect(try node.get("/api/summary", token: token).status == 401) }
    }

    @Test func aNodeWhoseRegistryHoldsMoreThanTheConfigDoesNotJoinACluster() throws {
        let directory = temporaryDirectory()
        let alone = try LiveEndpoint(directory: directory)
        let added = alone.request("POST", "/api/conversions", headers: Self.admin, body: Array(#"{"site":"shop.example","name":"Signup","trigger_data":3}"#.utf8))
        #expect(added.status == 201)
        alone.stop()
        let keys = try sharedKeyFile(["news.example", "shop.example"])
        #expect {
            _ = try LiveEndpoint(directory: directory) { configuration in
                configuration.cluster = true
                configuration.viewerTokens = temporaryDirectory() + "/viewer-tokens.json"
                configuration.tokenKeys = keys
            }
        } throws: { error in
            "\(error)".contains("conversion shop.example/Signup") && "\(error)".contains("config file")
        }
    }

    /// A member that was down while a registration was taken out of the shared file starts on
    /// the file as its reloads would have, rather than refusing to start (and, under systemd,
    /// starting again and again).
    @Test func aMemberRestartedAfterARemovalTakesTheFile() throws {
        let directory = temporaryDirectory()
        let keys = try sharedKeyFile(["news.example", "shop.example"])
        let viewers = temporaryDirectory() + "/viewer-tokens.json"
        let purchase = Conversion(site: "shop.example", name: "Purchase", triggerData: 5, priority: 1)
        let signup = Conversion(site: "shop.example", name: "Signup", triggerData: 3, priority: 0)
        func start(_ conversions: [Conversion]) throws -> LiveEndpoint {
            try LiveEndpoint(directory: directory) { configuration in
                configuration.cluster = true
                configuration.viewerTokens = viewers
                configuration.tokenKeys = keys
                configuration.conversions = conversions
            }
        }
        try start([purchase, signup]).stop()
        let node = try start([purchase])
        defer { node.stop() }
        let listed = try node.get("/api/conversions").bodyText
        #expect(listed.contains("Purchase") && !listed.contains("Signup"))
    }

    @Test func aNodeWithoutItsSitesSharedKeyDoesNotStartAndNamesTheCommand() throws {
        let keys = try sharedKeyFile(["news.example"])
        #expect {
            _ = try LiveEndpoint { configuration in
                configuration.cluster = true
                configuration.viewerTokens = temporaryDirectory() + "/viewer-tokens.json"
                configuration.tokenKeys = keys
            }
        } throws: { error in
            "\(error)".contains("no token key for shop.example") && "\(error)".contains("token-keys add shop.example")
        }
    }

    @Test func nodesGivenOneKeyFileServeTheSameBytesAndRotateAtTheSameInstant() throws {
        let keys = try sharedKeyFile(["news.example", "shop.example"])
        // The rotation, made once into the shared file as `token-keys add --serves-from` makes it.
        let rotation = Timestamp(rfc3339: "2026-12-01T00:00:00Z")!
        let book = try TokenKeyStore(path: keys, servedSites: [], foreignKeys: [:], clock: { rotation })
        let successor = try book.schedule(site: "shop.example", servesFrom: rotation)
        let nodes = try (0..<2).map { _ in
            try LiveEndpoint { configuration in
                configuration.cluster = true
                configuration.viewerTokens = temporaryDirectory() + "/viewer-tokens.json"
                configuration.tokenKeys = keys
            }
        }
        defer { nodes.forEach { $0.stop() } }
        func served() -> [String] { nodes.map { $0.request("GET", Self.keyPath, host: "shop.example").bodyText } }
        for node in nodes { node.clock.set("2026-11-30T23:59:59Z") }
        let before = served()
        #expect(before[0] == before[1])
        #expect(!before[0].contains(successor.served))
        for node in nodes { node.clock.set("2026-12-01T00:00:00Z") }
        let after = served()
        #expect(after[0] == after[1])
        #expect(after[0].contains(successor.served))
        // No node made a key of its own: the file is as the rotation left it.
        let file = try DurableJSONFile(path: keys, empty: TokenKeyStore.File()).load()
        #expect(file.keys.count == 3)
    }
}
