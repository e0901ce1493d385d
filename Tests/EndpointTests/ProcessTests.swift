import Dispatch
import Foundation
import Locking
import Testing
import RawHTTPClient
@testable import Endpoint

/// The real executable, driven with signals.
@Suite(.serialized) struct ProcessTests {
    /// Clients send reports as fast as they can; the server is SIGKILLed mid-stream, three times.
    /// After each restart every report that got a 201 is in the export exactly once.
    @Test func everyAcknowledgedReportSurvivesSIGKILL() throws {
        let directory = temporaryDirectory()
        let arguments = ["--data", directory, "--site", "news.example", "--site", "shop.example", "--token", "t"]
        let acknowledged = Locked<Set<Int>>([])
        let acknowledgements = TurnSignal()
        var nextNumber = 0
        for round in 0..<3 {
            let server = try EndpointProcess(arguments: arguments)
            let stop = Locked(false)
            let group = DispatchGroup()
            let senders = 8
            let base = nextNumber
            let port = server.port
            for sender in 0..<senders {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    guard let client = try? RawHTTPClient(port: port, timeout: 5) else { return }
                    var i = 0
                    while !stop.withLock({ $0 }) {
                        let n = base + i * senders + sender
                        i += 1
                        let body = reportBody(sourceID: n % 256, extra: ",\"n\":\(n)")
                        let request = "POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                        guard (try? client.send(request)) != nil, let response = try? client.readResponse() else { return }
                        if response.status == 201 {
                            acknowledged.withLock { _ = $0.insert(n) }
                            acknowledgements.signal()
                        }
                    }
                }
            }
            // Kill once this round has had a few hundred acknowledgements, or fail if the server
            // stops acknowledging: a minute is far past what a few hundred reports take.
            let target = acknowledged.withLock { $0.count } + 200 + round * 100
            if !acknowledgements.until(within: 60, { acknowledged.withLock { $0.count } >= target }) {
                Issue.record("round \(round): \(acknowledged.withLock { $0.count }) acknowledgements of \(target) after 60 s")
            }
            server.signal(SIGKILL)
            _ = server.wait()
            stop.withLock { $0 = true }
            group.wait()
            nextNumber = base + 1_000_000
        }

        let server = try EndpointProcess(arguments: arguments)
        let response = try httpRequest(port: server.port, method: "GET", path: "/api/reports", headers: [("Authorization", "Bearer t")])
        server.signal(SIGTERM)
        #expect(server.wait().status == 0)
        var seen: [Int: Int] = [:]
        for line in response.bodyText.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let n = try #require((object["extra"] as? [String: Any])?["n"] as? Int)
            seen[n, default: 0] += 1
        }
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= 900)
        #expect(acked.subtracting(seen.keys).isEmpty, "acknowledged but lost: \(acked.subtracting(seen.keys).sorted().prefix(10))")
        #expect(seen.values.allSatisfy { $0 == 1 }, "no report appears twice")
    }

    @Test func theRotateCommandSchedulesANewKeyOnTheRunningEndpoint() throws {
        let directory = temporaryDirectory()
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "news.example", "--token", "t"])
        defer { server.signal(SIGTERM); _ = server.wait() }
        // The token from the data directory would do too; here the endpoint was given one.
        let (status, output) = try runEndpoint(["rotate-token-key", "news.example", "--at", "2099-01-01T00:00:00Z",
                                                "--port", String(server.port), "--token", "t"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("\"site\":\"news.example\"") && output.contains("\"state\":\"scheduled\""))
        let listed = try httpRequest(port: server.port, method: "GET", path: "/api/token-keys", headers: [("Authorization", "Bearer t")])
        #expect(listed.bodyText.components(separatedBy: "\"site\":\"news.example\"").count == 3, "two keys: \(listed.bodyText)")
        let refused = try runEndpoint(["rotate-token-key", "elsewhere.example", "--port", String(server.port), "--token", "t"])
        #expect(refused.status == 1 && refused.output.contains("site_not_served"))
    }

    @Test func sigtermStopsCleanlyWithExitZero() throws {
        let directory = temporaryDirectory()
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "news.example", "--token", "t"])
        let response = try httpRequest(port: server.port, method: "POST",
                                       path: "/.well-known/private-click-measurement/report-attribution/",
                                       host: "news.example", headers: [("Content-Type", "application/json")],
                                       body: Array(reportBody().utf8))
        #expect(response.status == 201)
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(status == 0)
        #expect(stderr.contains("\"event\":\"stopped\",\"reports\":1"))
        // The executable's own URLSession host check is the one bound (FoundationNetworking's leaks
        // 43 bytes a call to Apple's API): the export in Package.swift took effect.
        #if os(Linux)
        #expect(stderr.contains("\"url_host_check\":\"endpoint\""))
        #endif
    }

    /// With the access log on: requests with the admin token, a viewer token, a wrong one and one
    /// in the URL where it does not belong; no token appears in any line the endpoint writes.
    @Test func noTokenAppearsInALogLine() throws {
        let directory = temporaryDirectory()
        let admin = "admin-token-that-must-not-be-logged"
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "shop.example", "--token", admin], accessLog: true)
        let made = try runEndpoint(["viewer-token", "add", "--label", "log test", "--data", directory])
        let viewer = try #require(made.output.split(separator: "\n").map(String.init).first { $0.hasPrefix("vt_") })
        for (token, path) in [(admin, "/api/summary"), (viewer, "/api/summary"), (viewer, "/api/conversions"), ("vt_wrong", "/api/reports"),
                              (admin, "/api/reports?token=\(viewer)")] {
            let method = path == "/api/conversions" ? "POST" : "GET"
            _ = try httpRequest(port: server.port, method: method, path: path, headers: [("Authorization", "Bearer \(token)")], body: Array("{}".utf8))
        }
        server.signal(SIGTERM)
        let (status, stderr) = server.wait()
        #expect(status == 0 && stderr.contains("\"path\":\"/api/summary\""), "the access log was written")
        #expect(!stderr.contains(admin) && !stderr.contains(viewer) && !stderr.contains(String(viewer.suffix(64))) && !stderr.contains("vt_wrong"))
    }

    /// stderr is a pipe whose reader stops reading (a stuck log shipper): the access log fills the
    /// pipe and the endpoint's log buffer, and from then on costs log lines, never reports.
    @Test func aStalledLogReaderCostsLinesNotReports() throws {
        let directory = temporaryDirectory()
        // Nobody reads this process's stderr after its "listening" line, until it has exited.
        let server = try EndpointProcess(arguments: ["--data", directory, "--site", "news.example", "--token", "t"], accessLog: true)
        let client = try RawHTTPClient(port: server.port, timeout: 10)
        let body = reportBody()
        let request = Array("POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: news.example\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        // 64 KB of pipe and 1 MB of buffer hold about 7,000 access-log lines; send twice that.
        let reports = 14_000, inFlight = 50
        var created = 0
        for _ in 0..<(reports / inFlight) {
            try client.send(Array((0..<inFlight).map { _ in request }.joined()))
            for _ in 0..<inFlight where try client.readResponse().status == 201 { created += 1 }
        }
        #expect(created == reports, "every report answered 201 while the log reader was stalled")
        #expect(try httpRequest(port: server.port, method: "GET", path: "/healthz").status == 200)
        let metrics = try httpRequest(port: server.port, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer t")]).bodyText
        let dropped = metrics.split(separator: "\n").first { $0.hasPrefix("attribution_log_lines_dropped_total ") }
            .flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        #expect(dropped > 1_000, "the lines that did not fit were counted: \(dropped)")

        server.signal(SIGTERM)
        #expect(server.exits(within: 20), "SIGTERM stops the endpoint although its stderr is not read")
        let (status, _) = server.wait()
        #expect(status == 0)
        let export = try EndpointProcess(arguments: ["--data", directory, "--site", "news.example", "--token", "t"])
        #expect(try httpRequest(port: export.port, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer t")])
            .bodyText.contains("attribution_store_reports \(reports)\n"), "every acknowledged report is in the log")
        export.signal(SIGTERM)
        _ = export.wait()
    }

    /// Killed with SIGKILL, the endpoint cannot write its checkpoint at the stop: the one written
    /// during the run is used, and the reports after it are read from the log.
    @Test func afterACrashThePeriodicCheckpointIsUsedAndTheNumbersAreTheLogs() throws {
        let directory = temporaryDirectory()
        let arguments = ["--data", directory, "--site", "news.example", "--site", "shop.example", "--token", "t"]
        let server = try EndpointProcess(arguments: arguments + ["--summary-checkpoint-interval", "0.1"])
        func post(_ n: Int) throws {
            let response = try httpRequest(port: server.port, method: "POST", path: "/.well-known/private-click-measurement/report-attribution/",
                                           host: n % 3 == 0 ? "shop.example" : "news.example", headers: [("Content-Type", "application/json")],
                                           body: Array(reportBody(sourceID: n % 256, triggerData: n % 16).utf8))
            #expect(response.status == 201)
        }
        for n in 0..<60 { try post(n) }
        // The checkpoint thread writes within a tenth of a second of a turn; wait (bounded) until
        // one covers some of the reports, then send more that only the log will have.
        let checkpoint = directory + "/" + SummaryCheckpoint.fileName
        let deadline = Date().addingTimeInterval(20)
        while (SummaryCheckpoint.claimedPrefix(atPath: checkpoint)?.records ?? 0) < 60 && Date() < deadline {
            try post(1000)
            Thread.sleep(forTimeInterval: 0.05)  // polling a file for an effect, bounded by the deadline
        }
        #expect((SummaryCheckpoint.claimedPrefix(atPath: checkpoint)?.records ?? 0) >= 60, "a checkpoint was written while running")
        for n in 60..<90 { try post(n) }
        server.signal(SIGKILL)
        _ = server.wait()

        func summaryAfterRestart(_ directory: String) throws -> (String, String) {
            let restarted = try EndpointProcess(arguments: ["--data", directory, "--site", "news.example", "--site", "shop.example", "--token", "t"])
            var response = try httpRequest(port: restarted.port, method: "GET", path: "/api/summary.csv?from=2026-01-01&to=2027-12-31",
                                           headers: [("Authorization", "Bearer t")])
            let deadline = Date().addingTimeInterval(20)
            while response.status == 503 && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.05)  // polling the API until the rebuild is done, bounded
                response = try httpRequest(port: restarted.port, method: "GET", path: "/api/summary.csv?from=2026-01-01&to=2027-12-31",
                                           headers: [("Authorization", "Bearer t")])
            }
            restarted.signal(SIGTERM)
            let (_, stderr) = restarted.wait()
            let rebuilt = stderr.split(separator: "\n").first { $0.contains("\"event\":\"summary_rebuilt\"") }.map(String.init) ?? ""
            return (response.bodyText, rebuilt)
        }
        let full = temporaryDirectory()
        try FileManager.default.removeItem(atPath: full)
        try FileManager.default.copyItem(atPath: directory, toPath: full)
        try FileManager.default.removeItem(atPath: full + "/" + SummaryCheckpoint.fileName)

        let (afterCrash, howAfterCrash) = try summaryAfterRestart(directory)
        let (rebuilt, howRebuilt) = try summaryAfterRestart(full)
        #expect(howAfterCrash.contains("\"checkpoint\":\"used\""), "\(howAfterCrash)")
        #expect(howRebuilt.contains("\"checkpoint\":\"missing\""), "\(howRebuilt)")
        #expect(afterCrash == rebuilt)
        #expect(afterCrash.split(whereSeparator: \.isNewline).count > 10, "the summary has the reports: \(afterCrash)")
    }

    @Test func helpDocumentsEveryOption() throws {
        let (status, output) = try runEndpoint(["--help"])
        #expect(status == 0)
        for option in ["--host", "--port", "--data", "--site", "--config", "--trusted-proxy", "--token", "--dev",
                       "--max-connections", "--request-timeout", "--idle-timeout", "--max-report-bytes",
                       "--no-access-log", "--log-preallocation-mb", "--manual-clock", "--late-cutoff-days", "--public", "--no-page",
                       "--summary-checkpoint-interval", "--apple-ads-max-pending",
                       "--help", EndpointConfiguration.environmentTokenName] {
            #expect(output.contains(option), "\(option)")
        }
    }

    @Test func badConfigurationIsRefusedWithAReason() throws {
        let noSite = try runEndpoint(["--port", "0", "--data", temporaryDirectory()])
        #expect(noSite.status == 64)
        #expect(noSite.output.contains("--site"))
        let subdomain = try runEndpoint(["--site", "www.news.example", "--data", temporaryDirectory()])
        #expect(subdomain.status == 64)
        #expect(subdomain.output.contains("news.example"))
        let unknown = try runEndpoint(["--frobnicate"])
        #expect(unknown.status == 64)
    }
}

@Suite struct ConfigurationTests {
    @Test func configFileIsReadAndFlagsOverrideIt() throws {
        let directory = temporaryDirectory()
        let path = directory + "/config.json"
        try Data(#"{"sites":["news.example"],"port":9999,"trusted_proxies":["127.0.0.1"],"max_report_bytes":4096}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        guard case .run(let c) = try EndpointConfiguration.parse(arguments: ["--port", "8081", "--config", path],
                                                                 environment: ["ATTRIBUTION_ENDPOINT_TOKEN": "from-env"]) else {
            Issue.record("expected a configuration")
            return
        }
        #expect(c.sites == ["news.example"])
        #expect(c.port == 8081)
        #expect(c.trustedProxies == ["127.0.0.1"])
        #expect(c.maxReportBytes == 4096)
        #expect(c.adminToken == "from-env")
    }

    /// Writes `json` to a config file and parses it with `arguments`, giving the refusal's text.
    private func refusal(file json: String, _ arguments: [String] = []) -> String? {
        let path = temporaryDirectory() + "/config.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(json.utf8))
        do {
            _ = try EndpointConfiguration.parse(arguments: ["--dev", "--config", path] + arguments, environment: [:])
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func eachFlagAndKeyIsDeclaredOnceAndShownInTheHelp() {
        let flags = EndpointConfiguration.options.compactMap(\.flag)
        let keys = EndpointConfiguration.options.compactMap(\.key)
        #expect(Set(flags).count == flags.count, "a flag declared twice")
        #expect(Set(keys).count == keys.count, "a key declared twice")
        let help = EndpointConfiguration.helpText
        for option in EndpointConfiguration.options {
            if let flag = option.flag { #expect(help.contains(flag + " "), "\(flag)") }
            if let key = option.key { #expect(help.contains("\"\(key)\""), "\(key)") }
        }
        // The defaults shown are the configuration's own, whatever line the wrapping put them on.
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("--max-connections N Concurrent connections before new ones get 503 (default 4096; 1 to 1000000)"))
        #expect(words.contains("(default 100000; 1 to 10000000)"))
    }

    /// Each command's help shows the endpoint's options it takes as the one table declares them,
    /// names no config-file key the file would refuse (viewer-token once said "data_dir"), and the
    /// endpoint's usage names every command the executable runs.
    @Test func everyCommandsHelpComesFromTheOneOptionTable() throws {
        let commands: [(String, String, [String])] = [
            ("viewer-token", ViewerTokenCommand.usage, ["--data", "--viewer-tokens", "--config"]),
            ("rotate-token-key", RotateTokenKeyCommand.usage, ["--port", "--token", "--data"]),
            ("token-keys", TokenKeysCommand.usage, ["--dev"]),
            ("check-plist", CheckPlistCommand.usage, ["--site", "--config"]),
            ("clickhouse", ClickHouseCommand.usage, ["--data", "--node"]),
        ]
        let keys = Set(EndpointConfiguration.options.compactMap(\.key))
        let keyNamed = try Regex(#"config file(?:'s)? (?:key )?"([a-z_]+)"|"([a-z_]+)" in the config file"#)
        for (name, usage, flags) in commands {
            for flag in flags {
                let declared = try #require(EndpointConfiguration.options.first { $0.flag == flag })
                #expect(usage.contains(declared.helpLines), "\(name) --help shows \(flag) otherwise than the table")
            }
            for match in (usage + EndpointConfiguration.helpText).matches(of: keyNamed) {
                let key = String(match.output[1].substring ?? match.output[2].substring ?? "")
                #expect(keys.contains(key), "\(name) --help names the config-file key \"\(key)\", which the file refuses")
            }
        }
        let executable = try String(contentsOfFile: repositoryRoot + "/Sources/Commands/attribution-endpoint/main.swift", encoding: .utf8)
        let dispatched = executable.matches(of: try Regex(#"case "([a-z-]+)""#)).map { String($0.output[1].substring ?? "") }
        #expect(dispatched.count >= 7)
        for command in dispatched {
            #expect(EndpointConfiguration.helpText.contains("attribution-endpoint \(command) "), "--help's usage omits \(command)")
        }
    }

    @Test(arguments: [(#"{"max_connections":0}"#, "--max-connections"), (#"{"idle_timeout":1e9}"#, "--idle-timeout"),
                      (#"{"late_cutoff_days":2}"#, "--late-cutoff-days"), (#"{"port":70000}"#, "port"),
                      (#"{"signature_threads":257}"#, "--signature-threads"), (#"{"apple_ads_timeout":1}"#, "--apple-ads-timeout"),
                      (#"{"max_report_bytes":1000.5}"#, "max_report_bytes"), (#"{"dev":"yes"}"#, "dev"),
                      (#"{"sites":"news.example"}"#, "sites"), (#"{"trusted_proxies":["10.0.0.0/33"]}"#, "--trusted-proxy"),
                      (#"{"apple_ads_api":"ftp://x"}"#, "--apple-ads-api"), (#"{"frobnicate":1}"#, "frobnicate"),
                      (#"{"apps":[1]}"#, "apps"), (#"{"postback_keys":{"k":"bm90IGEga2V5"}}"#, "--postback-key")])
    func aConfigFileValueOutOfRangeOrOfTheWrongTypeIsRefusedNamingTheOption(json: String, named: String) {
        let text = refusal(file: json)
        #expect(text?.contains(named) == true, "\(json): \(text ?? "accepted")")
    }

    /// Extremes and encodings of every kind of value an option takes, from the command line and
    /// from the file: refused with the option named, never a trap.
    @Test(arguments: [["--port", "-1"], ["--port", "65536"], ["--port", "18446744073709551616"], ["--port", "0x50"],
                      ["--port", "８０"], ["--max-connections", "9223372036854775808"], ["--max-connections", "-0"],
                      ["--idle-timeout", "nan"], ["--idle-timeout", "inf"], ["--idle-timeout", "-inf"], ["--idle-timeout", "1e400"],
                      ["--request-timeout", "0x1p-1074"], ["--signature-threads", "-1"], ["--apple-ads-api", ""],
                      ["--trusted-proxy", "::ffff:1.2.3.4/129"], ["--postback-key", "=x"], ["--postback-key", "k="],
                      ["--token-public-key", "news.example=%%%"], ["--site", "news.example\u{0}"], ["--node", "\u{202E}n"],
                      ["--max-report-bytes"], ["--no-page", "extra"],
                      // The Apple Ads Platform API: the pace's extremes, http to anyone but this machine, a file that is not there.
                      ["--apple-ads-platform-pace", "0"], ["--apple-ads-platform-pace", "61"], ["--apple-ads-platform-pace", "nan"],
                      ["--apple-ads-platform-pace", "inf"], ["--apple-ads-platform-api", "http://api.ads.apple.com/v1/"],
                      ["--apple-ads-platform-token-url", "ftp://appleid.apple.com/"], ["--apple-ads-platform-api", ""],
                      ["--apple-ads-platform", "/nonexistent/platform.json"], ["--apple-ads-platform", ""]])
    func anOptionsExtremeValuesAreRefusedNamingIt(arguments: [String]) {
        #expect(throws: EndpointConfiguration.ParseError.self, "\(arguments)") {
            try EndpointConfiguration.parse(arguments: ["--dev"] + arguments, environment: [:])
        }
    }

    @Test(arguments: [#"{"port":-1}"#, #"{"port":1e300}"#, #"{"port":"8080"}"#, #"{"max_connections":1.5}"#,
                      #"{"max_connections":18446744073709551616}"#, #"{"idle_timeout":"30"}"#, #"{"idle_timeout":-1e308}"#,
                      #"{"access_log":"no"}"#, #"{"node":5}"#, #"{"node":""}"#, #"{"sites":[1]}"#, #"{"postback_keys":["k"]}"#,
                      #"{"apps":{"app_id":1}}"#, #"{"conversions":[[]]}"#, #"[]"#, #"{"port":8080,"port":8081}"#])
    func aFilesExtremeValuesAreRefused(json: String) {
        #expect(refusal(file: json) != nil, "\(json)")
    }

    /// A flag repeated ten thousand times is a list of ten thousand, and the last wins for the rest.
    @Test func aFloodOfRepeatedFlagsIsTakenAsGiven() throws {
        let proxies = (0..<10_000).flatMap { ["--trusted-proxy", "10.\($0 / 256 % 256).\($0 % 256).1"] }
        let ports = (0..<1_000).flatMap { ["--port", String(8000 + $0)] }
        guard case .run(let c) = try EndpointConfiguration.parse(arguments: ["--dev"] + proxies + ports, environment: [:]) else {
            Issue.record("expected a configuration")
            return
        }
        #expect(c.trustedProxies.count == 10_000)
        #expect(c.port == 8999)
    }

    @Test func aNodeIsNamedByFlagOrFileAndOnlyWithCharactersThatNeedNoEscaping() throws {
        guard case .run(let named) = try EndpointConfiguration.parse(arguments: ["--dev", "--node", "edge-eu.2_b"], environment: [:]) else {
            Issue.record("expected a configuration")
            return
        }
        #expect(named.node == "edge-eu.2_b")
        #expect(refusal(file: #"{"node":"from-file"}"#) == nil)
        for bad in ["", String(repeating: "n", count: 65), "a b", "a\"b", "a}b", "nœud", "a\nb", "a,b"] {
            #expect(throws: (any Error).self, "\(bad.debugDescription)") {
                try EndpointConfiguration.parse(arguments: ["--dev", "--node", bad], environment: [:])
            }
        }
        #expect(refusal(file: #"{"node":"a b"}"#)?.contains("--node") == true)
        #expect(EndpointConfiguration.isNodeName(EndpointConfiguration.hostName()))
    }

    @Test func aFlagOverridesTheFileAndItsRangeIsTheFilesToo() throws {
        #expect(refusal(file: #"{"max_connections":5}"#) == nil)
        #expect(refusal(file: #"{"max_connections":5}"#, ["--max-connections", "0"])?.contains("--max-connections") == true)
        // The range is checked on what takes effect: a flag may correct the file.
        #expect(refusal(file: #"{"max_connections":0}"#, ["--max-connections", "9"]) == nil)
        let path = temporaryDirectory() + "/config.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"trusted_proxies":["10.0.0.1"],"page":false,"access_log":false}"#.utf8))
        guard case .run(let c) = try EndpointConfiguration.parse(
            arguments: ["--dev", "--config", path, "--trusted-proxy", "127.0.0.1", "--trusted-proxy", "::1"], environment: [:]) else {
            Issue.record("expected a configuration")
            return
        }
        // A repeated flag replaces the file's list with its own values, all of them.
        #expect(c.trustedProxies == ["127.0.0.1", "::1"])
        #expect(c.servePage == false)
        #expect(c.accessLog == false)
    }

    @Test func addressRanges() throws {
        let loopback = try #require(AddressRange("127.0.0.0/8"))
        #expect(loopback.contains("127.1.2.3"))
        #expect(!loopback.contains("128.0.0.1"))
        #expect(try #require(AddressRange("::1")).contains("::1"))
        #expect(try #require(AddressRange("10.0.0.0/8")).contains("10.200.0.1"))
        #expect(!(try #require(AddressRange("10.0.0.0/8")).contains("::1")))
        #expect(AddressRange("300.0.0.1") == nil)
        #expect(AddressRange("10.0.0.0/33") == nil)
    }

    @Test func theDemoFillsTheEndpointAndPrintsWhereToLook() throws {
        let directory = temporaryDirectory()
        let result = try runEndpoint(["demo", "--exit", "--port", "0", "--data", directory, "--token", "demo-token"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("Token  demo-token"))
        #expect(result.output.contains("Open   http://127.0.0.1:"))
        #expect(result.output.contains("refused as invalid"))
        // Everything it sent is on disk, in the real log: a segment a day of the demo's three weeks.
        let sealed = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/log")) ?? []
        let sizes = (sealed.filter { $0.hasSuffix(".log") }.map { directory + "/log/" + $0 } + [directory + "/reports.log"]).map { path in
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int).flatMap { $0 } ?? 0
        }
        #expect(sizes.count >= 21 && sizes.reduce(0, +) > 10_000)
    }
}
