import Dispatch
import Foundation
import HTTPServer
import Locking
import Primitives
import Testing
@testable import Endpoint

/// Hostile input to what issue 29 added: the cluster's summary queue flooded, `scope` repeated,
/// the options' files missing or garbage, the commands' arguments at their extremes. Each is
/// refused with a reason; nothing traps.
@Suite struct ClusterHostileTests {
    /// A listening socket that never accepts: a ClickHouse that takes connections and never answers.
    final class SilentServer {
        let fd: Int32
        let port: Int

        init() {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            listen(fd, 64)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        /// Closing resets every connection waiting in the backlog: the queries fail at once.
        func close() { _ = Glibc.close(fd) }
    }

    @Test func aFloodOfClusterSummariesIsAnswered503BusyPastEightWaitingAndNothingIsLost() throws {
        let silent = SilentServer()
        let endpoint = try LiveEndpoint { $0.clickhouse = "http://127.0.0.1:\(silent.port)/attribution" }
        let statuses = Locked<[(Int, String?)]>([])
        let answered = TurnSignal()
        let done = DispatchGroup()
        let server = endpoint.server
        for _ in 0..<30 {
            done.enter()
            DispatchQueue.global().async {
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "localhost")
                headers.add(name: "Authorization", value: "Bearer test-token")
                let response = server.respond(to: HTTPRequest(method: "GET", target: "/api/summary?scope=cluster", headers: headers,
                                                              body: [], remoteAddress: "127.0.0.1"))
                var rule: String?
                if case .bytes(let bytes)? = response?.body, case .object(let members)? = try? JSONParser().parse(bytes),
                   case .string(let text)? = members.first(where: { $0.key == "rule" })?.value {
                    rule = text
                }
                statuses.withLock { $0.append((response?.status ?? 0, rule)) }
                answered.signal()
                done.leave()
            }
        }
        // One query runs (and hangs), eight wait; the rest are turned away at once.
        let busy = { statuses.withLock { $0.filter { $0.1 == "cluster_summary_busy" }.count } }
        #expect(answered.until { busy() >= 21 })
        #expect(busy() == 21)
        silent.close()
        #expect(done.wait(timeout: .now() + 120) == .success)
        endpoint.stop()
        let all = statuses.withLock { $0 }
        #expect(all.count == 30)
        // The nine that waited for ClickHouse are told it did not answer; none is dropped, none is a 200.
        #expect(all.filter { $0.1 == "cluster_summary_unavailable" }.count == 9)
        #expect(all.allSatisfy { $0.0 == 503 })
        // The node's own numbers never waited for any of it.
    }

    @Test func aRepeatedScopeIsRefusedLikeAnyRepeatedParameter() throws {
        let endpoint = try LiveEndpoint()
        defer { endpoint.stop() }
        for query in ["scope=cluster&scope=node", "scope=node&scope=node", "scope=%6Eode&scope=node"] {
            let response = try endpoint.get("/api/summary?" + query)
            #expect(response.status == 400, "\(query)")
        }
        let long = try endpoint.get("/api/summary?scope=" + String(repeating: "c", count: 10_000))
        #expect(long.status == 400 && json(long)["rule"] as? String == "invalid_scope")
    }

    @Test func credentialsAndKeyFilesThatAreMissingOrGarbageStopTheStartWithAReason() throws {
        let folder = temporaryDirectory()
        let garbage = folder + "/garbage"
        try Data([0xFF, 0x00, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: garbage))
        let huge = folder + "/huge"
        try Data(repeating: 0x61, count: 5 << 20).write(to: URL(fileURLWithPath: huge))
        for file in [folder, garbage, huge, folder + "/missing", ""] {
            #expect(throws: EndpointConfiguration.ParseError.self, "\(file)") {
                try EndpointConfiguration.parse(arguments: ["--dev", "--clickhouse", "http://127.0.0.1:1/db", "--clickhouse-credentials", file],
                                                environment: [:])
            }
        }
        // A token-key file that is not JSON, or holds a key that is not one.
        for contents in ["{not json", #"{"keys":[{"site":"shop.example","private_key":"%%%","created_at":"2026-01-01T00:00:00Z","serves_from":"2026-01-01T00:00:00Z"}]}"#,
                         #"{"keys":[{"site":"shop.example","private_key":"AAAA","created_at":"2026-01-01T00:00:00Z","serves_from":"2026-01-01T00:00:00Z"}]}"#] {
            let keys = temporaryDirectory() + "/keys.json"
            try contents.write(toFile: keys, atomically: true, encoding: .utf8)
            #expect(throws: (any Error).self, "\(contents)") {
                _ = try LiveEndpoint { configuration in
                    configuration.cluster = true
                    configuration.viewerTokens = temporaryDirectory() + "/viewer-tokens.json"
                    configuration.tokenKeys = keys
                }
            }
        }
    }

    @Test(arguments: [["schema", "1db"], ["schema", "a;DROP TABLE x"], ["schema", String(repeating: "d", count: 65)], ["schema", "db", "extra"],
                      ["queries", "--from", "2026-13-01"], ["queries", "--to", "yesterday"], ["queries", "--from"],
                      ["rows", "no_such_table", "--data", "/tmp", "--node", "n"], ["rows", "pcm_reports", "--node", "n"],
                      ["rows", "pcm_reports", "--data", "/tmp", "--node", "a b"], ["rows"], ["frobnicate"], [],
                      ["queries", "--frob", "x"], ["schema", "--site", "x"], ["rows", "pcm_reports", "--data", "/tmp", "--node", "n", "--from", "x"]])
    func theClickHouseCommandRefusesWhatItCannotTake(arguments: [String]) {
        #expect(ClickHouseCommand.main(arguments: arguments) == 2, "\(arguments)")
    }

    @Test(arguments: [["add", "news.example"], ["add", "--file", "/tmp/k.json"], ["add", "www.news.example", "--file", "/tmp/never.json"],
                      ["add", "news.example", "--file", "/tmp/never.json", "--serves-from", "tomorrow"], ["add", "news.example", "--file"],
                      ["add", "news.example", "--file", "/tmp/never.json", "--frob"], ["list"], ["remove", "news.example"], []])
    func theTokenKeysCommandRefusesWhatItCannotTake(arguments: [String]) {
        #expect(TokenKeysCommand.main(arguments: arguments) == 2, "\(arguments)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/never.json"))
    }

    @Test func listingAKeyFileThatIsGarbageFailsWithoutATrap() throws {
        let file = temporaryDirectory() + "/keys.json"
        try "{\"keys\": 5}".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(TokenKeysCommand.main(arguments: ["list", "--file", file]) == 2)
    }
}
