import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// The data are the operator's alone: whatever the umask or an earlier version left, the data
/// folder and every folder in it are 0700 and every file 0600; a secret in a file others can read
/// is refused; `--token` is warned about.
@Suite(.serialized) struct FilesAtRestTests {
    /// Every file and folder below `directory` whose mode lets its group or others in.
    static func open(_ directory: String) -> [String] {
        var found: [String] = []
        var info = stat()
        if stat(directory, &info) == 0, info.st_mode & 0o077 != 0 { found.append(".") }
        let walk = FileManager.default.enumerator(atPath: directory)
        while let name = walk?.nextObject() as? String {
            guard lstat(directory + "/" + name, &info) == 0, (info.st_mode & S_IFMT) != S_IFLNK else { continue }
            if info.st_mode & 0o077 != 0 { found.append(name + " " + String(info.st_mode & 0o777, radix: 8)) }
        }
        return found
    }

    @Test func everyFileIs0600AndEveryFolder0700WhateverTheUmask() throws {
        let directory = temporaryDirectory()
        // An earlier version's folder, 0755 with a 0644 file, and the loosest umask.
        try FileManager.default.createDirectory(atPath: directory + "/log", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(directory, 0o755)
        _ = FileManager.default.createFile(atPath: directory + "/log/notes", contents: Data("an operator's".utf8), attributes: [.posixPermissions: 0o644])
        let previous = umask(0)
        defer { umask(previous) }
        let endpoint = try AccessTests.endpoint { $0.dataDirectory = directory; $0.manualClock = true }
        // Something of each kind: registrations, reports over two days (a sealed segment, its
        // digest, its sites), arrivals, a viewer token.
        let body = #"{"site":"shop.example","name":"purchase","trigger_data":3}"#
        #expect(endpoint.request("POST", "/api/conversions", headers: AccessTests.admin, body: Array(body.utf8)).status == 201)
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        #expect(endpoint.request("POST", "/admin/clock", headers: AccessTests.admin, body: Array(#"{"now":"2026-11-22T10:00:00Z"}"#.utf8)).status == 200)
        #expect(try endpoint.post(reportBody(), host: "news.example").status == 201)
        _ = try AccessTests.token(endpoint, advertiser: "acme")
        // What a start reads again in the background is whole before the sweeps are asked for: a
        // loaded machine (ThreadSanitizer's run) can still be reading when the reports are in.
        endpoint.server.waitUntilSummaryIsReady()
        endpoint.server.waitUntilPostbacksReady()
        endpoint.server.waitUntilAppleAdsReady()
        endpoint.server.segmentSites.sweep()
        endpoint.server.digests.sweep()
        endpoint.stop()
        let names = try FileManager.default.subpathsOfDirectory(atPath: directory)
        #expect(names.contains("registry.json") && names.contains("advertisers.json") && names.contains("arrivals.json"))
        #expect(names.contains { $0.hasPrefix("digests/") } && names.contains { $0.hasPrefix("segment-sites/") } && names.contains { $0.hasPrefix("log/") },
                "\(names.sorted())")
        #expect(Self.open(directory) == [], "open to others: \(Self.open(directory))")
    }

    @Test func aTokenFileOthersCanReadIsRefusedAndTheFlagIsWarnedAbout() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/token"
        _ = FileManager.default.createFile(atPath: file, contents: Data("file-token-1234\n".utf8), attributes: [.posixPermissions: 0o644])
        for mode: mode_t in [0o644, 0o640, 0o604, 0o666] {
            chmod(file, mode)
            #expect(throws: EndpointConfiguration.ParseError.self, "mode \(String(mode, radix: 8))") {
                try EndpointConfiguration.parse(arguments: ["--dev", "--token-file", file], environment: [:])
            }
        }
        chmod(file, 0o600)
        guard case .run(let parsed) = try EndpointConfiguration.parse(arguments: ["--dev", "--token-file", file], environment: [:]) else {
            Issue.record("expected a configuration")
            return
        }
        #expect(parsed.adminToken == "file-token-1234" && !parsed.adminTokenOnCommandLine)
        // The flag wins over the file and the environment, and is the one warned about.
        guard case .run(let flagged) = try EndpointConfiguration.parse(arguments: ["--dev", "--token", "flag", "--token-file", file],
                                                                       environment: [EndpointConfiguration.environmentTokenName: "env"]) else { return }
        #expect(flagged.adminToken == "flag" && flagged.adminTokenOnCommandLine)
        guard case .run(let fromEnvironment) = try EndpointConfiguration.parse(arguments: ["--dev"],
                                                                               environment: [EndpointConfiguration.environmentTokenName: "env"]) else { return }
        #expect(fromEnvironment.adminToken == "env" && !fromEnvironment.adminTokenOnCommandLine)
        // Empty, missing, a folder: refused.
        _ = FileManager.default.createFile(atPath: file, contents: Data(), attributes: [.posixPermissions: 0o600])
        for path in [file, directory + "/missing", directory] {
            #expect(throws: EndpointConfiguration.ParseError.self, "\(path)") {
                try EndpointConfiguration.parse(arguments: ["--dev", "--token-file", path], environment: [:])
            }
        }
    }

    @Test func theRealExecutableWarnsAboutTokenOnTheCommandLineAndNamesNoToken() throws {
        let directory = temporaryDirectory()
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "shop.example", "--token", "seen-in-ps-1234"])
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(status == 0 && stderr.contains("\"warning\":\"token_on_command_line\"") && !stderr.contains("seen-in-ps-1234"))
        let file = directory + "/token"
        _ = FileManager.default.createFile(atPath: file, contents: Data("from-a-file-5678".utf8), attributes: [.posixPermissions: 0o600])
        let quiet = try EndpointProcess(arguments: ["--data", directory, "--site", "shop.example", "--token-file", file])
        #expect(try httpRequest(port: quiet.port, method: "GET", path: "/api/summary", headers: [("Authorization", "Bearer from-a-file-5678")]).status == 200)
        quiet.signal(SIGTERM)
        let (_, quietErr) = quiet.wait()
        #expect(!quietErr.contains("token_on_command_line"))
    }

    @Test func clickHouseCredentialsOthersCanReadAreRefused() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/clickhouse"
        _ = FileManager.default.createFile(atPath: file, contents: Data("writer:s3cret\n".utf8), attributes: [.posixPermissions: 0o644])
        let arguments = ["--dev", "--clickhouse", "http://127.0.0.1:1/db", "--clickhouse-credentials", file]
        #expect(throws: EndpointConfiguration.ParseError.self) { try EndpointConfiguration.parse(arguments: arguments, environment: [:]) }
        chmod(file, 0o600)
        guard case .run(let closed) = try EndpointConfiguration.parse(arguments: arguments, environment: [:]) else { return }
        #expect(try closed.resolvedClickHouse()?.credentials?.user == "writer")
    }
}
