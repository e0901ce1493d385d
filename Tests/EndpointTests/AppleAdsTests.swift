import AppleAdsStandIn
import Primitives
import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// Apple Ads attribution: the app posts its token, the endpoint calls (a stand-in for) Apple's
/// API by seed 002's rules, and the app reads the answer by an unguessable id.
@Suite(.serialized) struct AppleAdsTests {
    static let attributed = #"{"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136,"clickDate":"2026-11-20T09:12Z","deviceModel":"iPhone","ip":"192.0.2.1"}"#

    func endpoint(_ standIn: AppleAdsStandIn, directory: String = temporaryDirectory(), startingAt: String? = nil) throws -> LiveEndpoint {
        try LiveEndpoint(sites: ["app.example"], directory: directory, startingAt: startingAt) {
            $0.appleAdsAPI = standIn.url
            $0.appleAdsTimeout = 5
        }
    }

    func post(_ endpoint: LiveEndpoint, _ token: String, host: String = "app.example") throws -> RawResponse {
        try httpRequest(port: endpoint.port, method: "POST", path: "/apple-ads/attribution", host: host,
                        headers: [("Content-Type", "text/plain")], body: Array(token.utf8))
    }

    func status(_ endpoint: LiveEndpoint, _ id: String) -> [String: Any] {
        json(endpoint.request("GET", "/apple-ads/attribution/" + id))
    }

    /// Moves the clock to `seconds` after `start` and waits until every call due by then is made and recorded.
    func at(_ endpoint: LiveEndpoint, _ start: String, plus seconds: Double) {
        endpoint.clock.now.withLock { $0 = Timestamp(rfc3339: start)!.millisecondsSinceEpoch + Int64(seconds * 1000) }
        #expect(endpoint.server.appleAds.waitUntilSettled(timeout: 120))
    }

    @Test func notFoundIsTriedEveryFiveSecondsAtMostThreeTimesMore() throws {
        let standIn = try AppleAdsStandIn(scripts: ["token-404": [.answer(404, "")]])
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        let accepted = try post(endpoint, "token-404")
        #expect(accepted.status == 202)
        let id = try #require(json(accepted)["id"] as? String)
        #expect(id.count == 32 && accepted.header("Location") == "/apple-ads/attribution/" + id)
        #expect(accepted.header("Set-Cookie") == nil)
        at(endpoint, start, plus: 0)
        #expect(standIn.calls(for: "token-404") == 1)
        #expect(status(endpoint, id)["next_call_at"] as? String == "2026-11-20T10:00:05.000Z")
        at(endpoint, start, plus: 4.999)
        #expect(standIn.calls(for: "token-404") == 1, "not before 5 s")
        for (n, seconds) in [(2, 5.0), (3, 10.0), (4, 15.0)] {
            at(endpoint, start, plus: seconds)
            #expect(standIn.calls(for: "token-404") == n, "call \(n) at \(seconds) s")
        }
        let final = status(endpoint, id)
        #expect(final["status"] as? String == "not_found" && final["calls"] as? Int == 4 && final["last_http_status"] as? Int == 404)
        at(endpoint, start, plus: 3600)
        #expect(standIn.calls(for: "token-404") == 4, "no call after the final answer")
    }

    @Test func anOutageBacksOffUntilAnAnswerAndTheRecordKeepsOnlyApplesFields() throws {
        let standIn = try AppleAdsStandIn(scripts: ["token-down": [.answer(500, ""), .drop, .answer(200, Self.attributed)]])
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        let id = try #require(json(try post(endpoint, "token-down"))["id"] as? String)
        at(endpoint, start, plus: 0)
        #expect(standIn.calls(for: "token-down") == 1)
        at(endpoint, start, plus: 29.9)
        #expect(standIn.calls(for: "token-down") == 1, "the first back-off is 30 s")
        at(endpoint, start, plus: 30)
        #expect(standIn.calls(for: "token-down") == 2)
        #expect(status(endpoint, id)["last_http_status"] is NSNull, "a dropped connection has no status")
        at(endpoint, start, plus: 89.9)
        #expect(standIn.calls(for: "token-down") == 2, "the second back-off is 60 s")
        at(endpoint, start, plus: 90)
        let answer = status(endpoint, id)
        #expect(answer["status"] as? String == "attributed" && answer["calls"] as? Int == 3)
        let record = try #require(answer["record"] as? [String: Any])
        #expect(record["campaignId"] as? Int == 542370539 && record["keywordId"] as? Int == 87675432 && record["clickDate"] as? String == "2026-11-20T09:12Z")
        #expect(Set(record.keys) == ["attribution", "orgId", "campaignId", "adGroupId", "keywordId", "adId", "conversionType", "claimType",
                                     "countryOrRegion", "clickDate"], "nothing but Apple's documented fields: \(record.keys)")
    }

    @Test func invalidTokensAreFinalAndTokens24HoursOldExpire() throws {
        let standIn = try AppleAdsStandIn(scripts: ["token-bad": [.answer(400, "")], "token-never": [.answer(503, "")],
                                                    "token-not": [.answer(200, #"{"attribution":false}"#)]])
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        // The one Apple never answers comes last: its 503 pauses every call not made yet.
        let bad = try #require(json(try post(endpoint, "token-bad"))["id"] as? String)
        let not = try #require(json(try post(endpoint, "token-not"))["id"] as? String)
        let never = try #require(json(try post(endpoint, "token-never"))["id"] as? String)
        at(endpoint, start, plus: 0)
        #expect(status(endpoint, bad)["status"] as? String == "invalid_token")
        #expect((status(endpoint, not)["record"] as? [String: Any])?["attribution"] as? Bool == false)
        #expect(status(endpoint, not)["status"] as? String == "not_attributed")
        at(endpoint, start, plus: 24 * 3600 + 1)
        let expired = status(endpoint, never)
        // Its next call, 30 s after the first, falls past its 24 hours: it expires uncalled.
        #expect(expired["status"] as? String == "expired" && expired["calls"] as? Int == 1, "\(expired)")
        at(endpoint, start, plus: 48 * 3600)
        #expect(standIn.calls(for: "token-bad") == 1 && standIn.calls(for: "token-never") == 1 && standIn.calls(for: "token-not") == 1)
    }

    /// Apple holds a 404 for about a second: a slow answer is an answer, not a time-out.
    @Test func aSlowAnswerIsWaitedFor() throws {
        let standIn = try AppleAdsStandIn(scripts: ["token-slow": [.answer(404, "", delay: 1.5), .answer(200, Self.attributed)]])
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        let id = try #require(json(try post(endpoint, "token-slow"))["id"] as? String)
        at(endpoint, start, plus: 0)
        #expect(status(endpoint, id)["last_http_status"] as? Int == 404)
        at(endpoint, start, plus: 5)
        #expect(status(endpoint, id)["status"] as? String == "attributed")
    }

    @Test func theSameTokenTwiceIsOneTokenAndRefusalsAreExplained() throws {
        let standIn = try AppleAdsStandIn(otherwise: .answer(200, Self.attributed))
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let first = json(try post(endpoint, "token-twice\n"))
        let second = try post(endpoint, "token-twice")
        #expect(second.status == 202 && json(second)["id"] as? String == first["id"] as? String)
        #expect(endpoint.server.appleAds.waitUntilSettled(timeout: 120))
        #expect(standIn.calls(for: "token-twice") == 1)
        #expect(try post(endpoint, "token-twice").status == 202)
        #expect(endpoint.server.appleAds.waitUntilSettled(timeout: 120))
        #expect(standIn.calls(for: "token-twice") == 1, "a token with a final answer is never sent again")

        let empty = try post(endpoint, "")
        #expect(empty.status == 400 && json(empty)["rule"] as? String == "empty_token")
        let long = try post(endpoint, String(repeating: "A", count: 4097))
        #expect(long.status == 422 && json(long)["rule"] as? String == "token_too_long")
        let spaced = try post(endpoint, "two words")
        #expect(spaced.status == 422 && json(spaced)["rule"] as? String == "not_a_token")
        #expect(try post(endpoint, "token", host: "elsewhere.example").status == 421)
        let unknown = endpoint.request("GET", "/apple-ads/attribution/00000000000000000000000000000000")
        #expect(unknown.status == 404 && json(unknown)["rule"] as? String == "unknown_token_id")
        // The answered token's id, as a stranger might mangle it: upper case, cut, grown, not hex,
        // percent-encoded, huge. Each is no token (ids are kept as 16 bytes), never a 5xx.
        let answered = try #require(first["id"] as? String)
        #expect(endpoint.request("GET", "/apple-ads/attribution/" + answered).status == 200)
        for mangled in [answered.uppercased(), String(answered.dropLast()), answered + "0", String(answered.dropLast()) + "g",
                        "%30" + answered.dropFirst(), String(repeating: "f", count: 32), "", String(repeating: "a", count: 10_000)] {
            let response = endpoint.request("GET", "/apple-ads/attribution/" + mangled)
            #expect(response.status == 404 || response.status == 400 || response.status == 414, "\(mangled.prefix(40)): \(response.status)")
        }
    }

    /// A restart resumes what was pending, with its count of 404s, and never calls again for a
    /// token that has a final answer.
    @Test func aRestartResumesPendingCallsAndRepeatsNoFinalOne() throws {
        let standIn = try AppleAdsStandIn(scripts: ["token-404": [.answer(404, "")], "token-done": [.answer(200, Self.attributed)]])
        defer { standIn.stop() }
        let directory = temporaryDirectory()
        let start = "2026-11-20T10:00:00Z"
        var endpoint = try endpoint(standIn, directory: directory)
        endpoint.clock.set(start)
        let pending = try #require(json(try post(endpoint, "token-404"))["id"] as? String)
        let done = try #require(json(try post(endpoint, "token-done"))["id"] as? String)
        at(endpoint, start, plus: 0)
        at(endpoint, start, plus: 5)
        #expect(standIn.calls(for: "token-404") == 2 && standIn.calls(for: "token-done") == 1)
        endpoint.stop()

        endpoint = try self.endpoint(standIn, directory: directory)
        defer { endpoint.stop() }
        at(endpoint, start, plus: 5)
        #expect(status(endpoint, done)["status"] as? String == "attributed")
        #expect(status(endpoint, pending)["calls"] as? Int == 2)
        at(endpoint, start, plus: 10)
        at(endpoint, start, plus: 15)
        #expect(status(endpoint, pending)["status"] as? String == "not_found")
        #expect(standIn.calls(for: "token-404") == 4, "three retries in all, across the restart")
        #expect(standIn.calls(for: "token-done") == 1)
    }

    /// SIGKILL while calls are under way: every token acknowledged 202 gets its answer after the
    /// restart, none is lost.
    @Test func nothingAcceptedIsLostAcrossASIGKILL() throws {
        let standIn = try AppleAdsStandIn(otherwise: .hold)
        defer { standIn.stop() }
        let directory = temporaryDirectory()
        let arguments = ["--data", directory, "--site", "app.example", "--token", "t", "--apple-ads-api", standIn.url]
        var server = try EndpointProcess(arguments: arguments)
        var ids: [String: String] = [:]
        for n in 0..<20 {
            let token = "kill-token-\(n)"
            let response = try httpRequest(port: server.port, method: "POST", path: "/apple-ads/attribution", host: "app.example",
                                           headers: [("Content-Type", "text/plain")], body: Array(token.utf8))
            #expect(response.status == 202)
            ids[token] = json(response)["id"] as? String
        }
        // Calls are under way (held by the stand-in) when the process dies.
        // Bounded waits, generous for ThreadSanitizer on a busy machine; they end when the condition holds.
        let deadline = Date().addingTimeInterval(120)
        #expect(standIn.waitForCalls(atLeast: 6, within: 120))
        server.signal(SIGKILL)
        _ = server.wait()
        standIn.answerUnscripted(.answer(200, Self.attributed))

        server = try EndpointProcess(arguments: arguments)
        defer { server.signal(SIGTERM); _ = server.wait() }
        var answered: [String: String] = [:]
        while answered.count < ids.count && Date() < deadline.addingTimeInterval(120) {
            for (token, id) in ids where answered[token] == nil {
                let response = try httpRequest(port: server.port, method: "GET", path: "/apple-ads/attribution/" + id)
                if let status = json(response)["status"] as? String, status != "pending" { answered[token] = status }
            }
            usleep(20_000)  // polling the restarted process, bounded
        }
        #expect(answered.count == 20 && answered.values.allSatisfy { $0 == "attributed" }, "\(answered)")
        for token in ids.keys {
            #expect((1...2).contains(standIn.calls(for: token)), "\(token): a held call, then the answer")
        }
    }

    /// The Apple Ads view's numbers equal what the export lists, with the registered names.
    @Test func theSummaryMatchesTheExportWithNames() throws {
        let redownload = Self.attributed.replacingOccurrences(of: "\"Download\"", with: "\"Redownload\"")
        let otherKeyword = Self.attributed.replacingOccurrences(of: "87675432", with: "11111111")
        let standIn = try AppleAdsStandIn(scripts: ["t1": [.answer(200, Self.attributed)], "t2": [.answer(200, Self.attributed)],
                                                    "t3": [.answer(200, redownload)], "t4": [.answer(200, otherKeyword)],
                                                    "t5": [.answer(200, #"{"attribution":false}"#)], "t6": [.answer(400, "")],
                                                    "t7": [.answer(404, "")]])
        defer { standIn.stop() }
        let endpoint = try endpoint(standIn)
        defer { endpoint.stop() }
        let names = #"{"campaign_id":542370539,"name":"Winter puzzles","ad_groups":[{"id":542317095,"name":"Puzzle fans"}],"keywords":[{"id":87675432,"name":"puzzle game"}]}"#
        let registered = endpoint.request("POST", "/api/apple-ads/campaigns", headers: [("Authorization", "Bearer test-token")], body: Array(names.utf8))
        #expect(registered.status == 201, "\(registered.bodyText)")
        let start = "2026-11-20T10:00:00Z"
        endpoint.clock.set(start)
        for n in 1...7 { #expect(try post(endpoint, "t\(n)").status == 202) }
        at(endpoint, start, plus: 0)

        let lines = try endpoint.get("/api/apple-ads").bodyText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(lines.count == 7)
        #expect(lines.allSatisfy { $0.keys.count == 22 && $0["campaignId"] != nil }, "every column on every line")
        // Lines come in the order Apple answered, which the stand-in's concurrent answers do not fix:
        // a line of the registered campaign and keyword is looked for, not the first.
        let first = try #require(lines.first { $0["status"] as? String == "attributed" && ($0["keywordId"] as? Int) == 87675432 })
        #expect(first["campaign_name"] as? String == "Winter puzzles" && first["ad_group_name"] as? String == "Puzzle fans"
                && first["keyword_name"] as? String == "puzzle game")
        var statuses: [String: Int] = [:]
        for line in lines { statuses[line["status"] as! String, default: 0] += 1 }
        #expect(statuses == ["attributed": 4, "not_attributed": 1, "invalid_token": 1, "pending": 1])

        let summary = json(try endpoint.get("/api/apple-ads/summary?from=2026-11-20&to=2026-11-20"))
        #expect(summary["tokens"] as? Int == 7)
        let byStatus = try #require(summary["by_status"] as? [String: Int])
        #expect(byStatus.filter { $0.value > 0 } == statuses)
        let installs = try #require(summary["installs"] as? [[String: Any]])
        #expect(installs.count == 2)
        let named = try #require(installs.first { $0["keyword_id"] as? Int == 87675432 })
        #expect(named["downloads"] as? Int == 2 && named["redownloads"] as? Int == 1 && named["keyword_name"] as? String == "puzzle game")
        let unnamed = try #require(installs.first { $0["keyword_id"] as? Int == 11111111 })
        #expect(unnamed["downloads"] as? Int == 1 && unnamed["keyword_name"] is NSNull && unnamed["campaign_name"] as? String == "Winter puzzles")
        let other = json(try endpoint.get("/api/apple-ads/summary?from=2026-11-21&to=2026-11-22"))
        #expect(other["tokens"] as? Int == 0)

        let csv = try endpoint.get("/api/apple-ads.csv").bodyText.split(separator: "\r\n")
        #expect(csv.count == 8 && csv[0].hasPrefix("id,received_at,site,status,calls"))
        #expect(csv.dropFirst().filter { $0.contains(",attributed,") }.count == 4)
    }
}
