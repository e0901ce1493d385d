import Dispatch
import Foundation
import Locking
import Testing
import RawHTTPClient
@testable import HTTPServer

/// Starts a real server on port 0 with `handler`, runs `body`, then shuts it down.
private func withServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    handler: any HTTPHandler = EchoHandler(),
    _ body: (UInt16, HTTPServer) throws -> Void
) throws {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configuration.accessLog = nil
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    let port = try server.start()
    defer {
        server.shutdown()
        server.waitUntilStopped()
    }
    try body(port, server)
}

/// Runs `body` with a `LineWriter` writing to a file of its own, then closes the writer and
/// returns the file's lines, raw and parsed as JSON objects.
private func withAccessLog(_ body: (LineWriter) throws -> Void) throws -> (lines: [Substring], parsed: [[String: Any]]) {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString).log").path
    let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    #expect(fd >= 0)
    defer { unlink(file) }
    let writer = LineWriter(fd: fd)
    try body(writer)
    #expect(writer.close(waitingAtMost: 10))
    close(fd)
    let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
    return (lines, try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] })
}

/// Answers with the method, path and body it received.
struct EchoHandler: HTTPHandler {
    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        let text = "\(request.method) \(request.path) \(String(decoding: request.body, as: UTF8.self))"
        responder.respond(HTTPResponse.text(200, text))
    }
}

/// Holds each request until the test releases it, to control completion order.
final class HeldHandler: HTTPHandler, @unchecked Sendable {
    let held = Locked<[(String, HTTPResponder)]>([])
    let arrived = DispatchSemaphore(value: 0)

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        held.withLock { $0.append((String(request.path), responder)) }
        arrived.signal()
    }

    func release(_ path: String) {
        let responder = held.withLock { list -> HTTPResponder? in
            guard let i = list.firstIndex(where: { $0.0 == path }) else { return nil }
            return list.remove(at: i).1
        }
        responder?.respond(HTTPResponse.text(200, "done \(path)"))
    }
}

/// Answers nothing in `handle`; answers everything the turn brought in `endTurn`, saying how
/// many requests that turn held (as the endpoint commits a turn's reports with one flush).
final class TurnBatchingHandler: HTTPHandler, @unchecked Sendable {
    // Touched only on the loop thread.
    private var waiting: [HTTPResponder] = []

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        waiting.append(responder)
    }

    func endTurn() -> Bool {
        while !waiting.isEmpty {
            let turn = waiting
            waiting.removeAll()
            // Answering may read a pipelined request that was waiting its turn: answered in the loop.
            for responder in turn { responder.respond(HTTPResponse.text(200, "answered with \(turn.count)")) }
        }
        return false
    }
}

/// Answers writes (POST) in `endTurn`, as the endpoint answers a report once its turn's
/// flush is done, and reads (GET) at once; notes the order in which it saw and answered them.
final class WritesAnsweredAtTurnEnd: HTTPHandler, @unchecked Sendable {
    // `waiting` is touched only on the loop thread.
    private var waiting: [(path: String, responder: HTTPResponder)] = []
    let events = Locked<[String]>([])

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        events.withLock { $0.append("handle \(request.path)") }
        if request.method == "GET" {
            responder.respond(HTTPResponse.text(200, "read \(request.path)"))
        } else {
            waiting.append((String(request.path), responder))
        }
    }

    func endTurn() -> Bool {
        let turn = waiting
        waiting.removeAll()
        for (path, responder) in turn {
            events.withLock { $0.append("answered \(path)") }
            responder.respond(HTTPResponse.text(200, "wrote \(path)"))
        }
        return false
    }
}

/// Answers in `endTurn`, as the endpoint answers reports while their flush is in flight, and
/// withdraws the answer to `/withdraw` there. It also looks, before `endTurn` returns, whether
/// the client named by `watched` has been sent anything yet: loopback delivers inside `send`, so
/// bytes sent would already be readable.
final class TurnEndHandler: HTTPHandler, @unchecked Sendable {
    // `waiting` is touched only on the loop thread.
    private var waiting: [(path: String, responder: HTTPResponder)] = []
    let watched = Locked<Int32?>(nil)
    /// For each turn that had the watched client's request: were its bytes readable during the turn?
    let sentDuringTurn = Locked<[Bool]>([])

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        if request.path == "/now" {
            responder.respond(HTTPResponse.text(200, "now"))
            responder.withdraw()  // outside `endTurn` the answer is on its way: nothing to withdraw
            return
        }
        waiting.append((String(request.path), responder))
    }

    func endTurn() -> Bool {
        guard !waiting.isEmpty else { return false }
        for (path, responder) in waiting {
            responder.respond(HTTPResponse.text(200, "answered \(path)"))
            if path == "/withdraw" { responder.withdraw() }
        }
        waiting.removeAll()
        if let fd = watched.withLock({ $0 }) {
            var byte: UInt8 = 0
            let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            sentDuringTurn.withLock { $0.append(n > 0) }
        }
        return false
    }
}

/// Answers according to the path: a status and header fields that differ from one request to the
/// next, to show that a connection never sends one response's head with another's.
struct VaryingHeadHandler: HTTPHandler {
    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        switch request.path {
        case "/json": responder.respond(HTTPResponse(status: 201, headers: ["Content-Type": "application/json"], body: Array("{}".utf8)))
        case "/other": responder.respond(HTTPResponse(status: 201, headers: ["Content-Type": "application/json", "X-Other": "1"],
                                                      body: Array("{}".utf8)))
        case "/close": responder.respond(HTTPResponse(status: 200, headers: ["Connection": "close"], body: Array("bye".utf8)))
        default: responder.respond(HTTPResponse.text(404, "no"))
        }
    }
}

@Suite struct LiveServerTests {
    /// The loop reuses the start of the last head while status and fields repeat; every change
    /// of either must show, and a handler's `Connection: close` must still close.
    @Test func eachResponseCarriesItsOwnStatusAndFields() throws {
        try withServer(handler: VaryingHeadHandler()) { port, _ in
            let client = try RawHTTPClient(port: port)
            for (path, status, other, type) in [("/json", 201, nil, "application/json"), ("/json", 201, nil, "application/json"),
                                                 ("/other", 201, "1", "application/json"), ("/json", 201, nil, "application/json"),
                                                 ("/missing", 404, nil, "text/plain; charset=utf-8"),
                                                 ("/json", 201, nil, "application/json")] {
                try client.send("GET \(path) HTTP/1.1\r\nHost: h\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == status, "\(path)")
                #expect(response.header("X-Other") == other, "\(path)")
                #expect(response.header("Content-Type") == type, "\(path)")
                #expect(response.header("Date") != nil)
            }
            try client.send("GET /close HTTP/1.1\r\nHost: h\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.bodyText == "bye" && response.header("Connection") == "close")
            #expect(try client.waitForClose())
        }
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            for i in 0..<5 {
                try client.send("GET /n\(i) HTTP/1.1\r\nHost: h\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.bodyText == "GET /n\(i) ")
                #expect(response.header("Connection") == nil)
            }
        }
    }

    /// One JSON line per request, which a log shipper can parse: the path without its query (which
    /// may carry what the log must not keep), quotes and backslashes escaped.
    @Test func accessLogLinesAreJSONWithThePathButNotTheQuery() throws {
        let (lines, parsed) = try withAccessLog { writer in
            try withServer({ $0.accessLog = writer }) { port, _ in
                let client = try RawHTTPClient(port: port)
                for target in ["/plain", "/a\"b\\c?secret=1", "/n?"] {
                    try client.send("POST \(target) HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
                    #expect(try client.readResponse().status == 200)
                }
            }
        }
        #expect(parsed.map { $0["path"] as? String } == ["/plain", "/a\"b\\c", "/n"])
        #expect(parsed.allSatisfy { $0["method"] as? String == "POST" && $0["status"] as? Int == 200 && $0["bytes_in"] as? Int == 3 })
        #expect(!lines.contains { $0.contains("secret") })
    }

    /// What lets the endpoint prepare a report's answer before its flush is done: an answer given
    /// in `endTurn` is not sent before `endTurn` returns.
    @Test func answersGivenAtTheEndOfATurnLeaveAfterIt() throws {
        let handler = TurnEndHandler()
        try withServer(handler: handler) { port, _ in
            let client = try RawHTTPClient(port: port)
            handler.watched.withLock { $0 = client.fd }
            for i in 0..<3 {
                try client.send("GET /turn\(i) HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().bodyText == "answered /turn\(i)")
            }
            #expect(handler.sentDuringTurn.withLock { $0 } == [false, false, false])
        }
    }

    /// A withdrawn answer never leaves: its connection is closed with nothing sent, its log line
    /// says so, and the other connections of the same turns are answered as usual.
    @Test func aWithdrawnAnswerClosesItsConnectionWithNothingSent() throws {
        let (_, parsed) = try withAccessLog { writer in
            try withServer({ $0.accessLog = writer }, handler: TurnEndHandler()) { port, _ in
                let kept = try RawHTTPClient(port: port)
                let withdrawn = try RawHTTPClient(port: port)
                try kept.send("GET /keep HTTP/1.1\r\nHost: h\r\n\r\n")
                try withdrawn.send("GET /withdraw HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try kept.readResponse().bodyText == "answered /keep")
                #expect(try withdrawn.waitForClose())
                #expect(withdrawn.unread.isEmpty)
                // Withdrawing outside the end of a turn changes nothing: the answer was already sent.
                try kept.send("GET /now HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try kept.readResponse().bodyText == "now")
            }
        }
        #expect(parsed.count == 3)
        #expect(parsed.first { $0["path"] as? String == "/withdraw" }?["withdrawn"] as? Bool == true)
        #expect(parsed.filter { $0["withdrawn"] != nil }.count == 1)
    }

    /// A request handed over in process takes a connection's steps: answered at once, or held
    /// while the turn ends and then given, or withdrawn there (nil, where a connection closes).
    @Test func aRequestInProcessTakesTheSameStepsAsAConnections() throws {
        let handler = TurnEndHandler()
        try withServer(handler: handler) { _, server in
            #expect(server.respond(to: HTTPRequest(method: "GET", target: "/now"))?.status == 200)
            let held = try #require(server.respond(to: HTTPRequest(method: "GET", target: "/turn")))
            #expect(String(decoding: heldBody(held), as: UTF8.self) == "answered /turn")
            #expect(server.respond(to: HTTPRequest(method: "GET", target: "/withdraw")) == nil)
            // Many at once, from many threads: each gets its own answer.
            let answers = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 16) { i in
                if let response = server.respond(to: HTTPRequest(method: "GET", target: "/t\(i)")) {
                    answers.withLock { $0.append(String(decoding: heldBody(response), as: UTF8.self)) }
                }
            }
            #expect(Set(answers.withLock { $0 }) == Set((0..<16).map { "answered /t\($0)" }))
        }
    }

    @Test func aRequestInProcessAfterTheServerStoppedGetsNoAnswer() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.accessLog = nil
        let server = HTTPServer(configuration: configuration, handler: EchoHandler())
        #expect(server.respond(to: HTTPRequest(method: "GET", target: "/")) == nil, "not started")
        _ = try server.start()
        #expect(server.respond(to: HTTPRequest(method: "GET", target: "/x"))?.status == 200)
        server.shutdown()
        server.waitUntilStopped()
        #expect(server.respond(to: HTTPRequest(method: "GET", target: "/")) == nil, "stopped")
    }

    @Test func workLeftForTheEndOfTheTurnIsDoneWithoutWaitingForAnotherEvent() throws {
        // With nothing else to wake it, the loop would next wake in 30 s: the client gives up after
        // 3, so an answer left for a later turn fails the test instead of arriving late.
        try withServer({ $0.timeoutCheckInterval = 30 }, handler: TurnBatchingHandler()) { port, _ in
            let client = try RawHTTPClient(port: port)
            client.setTimeout(3)
            try client.send("GET /alone HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().bodyText == "answered with 1")
            // Pipelined requests read in one turn are answered together, in order.
            try client.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
            for _ in 0..<3 { #expect(try client.readResponse().status == 200) }
        }
    }

    @Test func aReadPipelinedBehindAWriteWaitsForItsAnswer() throws {
        let handler = WritesAnsweredAtTurnEnd()
        try withServer(handler: handler) { port, _ in
            let client = try RawHTTPClient(port: port)
            // One write, then two reads and a second write, in one send: the reads must see the write.
            try client.send("POST /w1 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
                            + "GET /r1 HTTP/1.1\r\nHost: h\r\n\r\nGET /r2 HTTP/1.1\r\nHost: h\r\n\r\n"
                            + "POST /w2 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
            for expected in ["/w1", "/r1", "/r2", "/w2"] {
                #expect(try client.readResponse().bodyText.hasSuffix(expected))
            }
            let events = handler.events.withLock { $0 }
            #expect(events.firstIndex(of: "answered /w1")! < events.firstIndex(of: "handle /r1")!, "\(events)")
            #expect(events.firstIndex(of: "answered /w1")! < events.firstIndex(of: "handle /r2")!, "\(events)")
        }
    }

    @Test func manyPipelinedRequestsAreAllAnsweredAcrossTurnsEvenAfterAHalfClose() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send(String(repeating: "GET /x HTTP/1.1\r\nHost: h\r\n\r\n", count: 60))
            client.shutdownWrite()
            for _ in 0..<60 { #expect(try client.readResponse().bodyText == "GET /x ") }
            #expect(try client.waitForClose())
        }
    }

    @Test func pipelinedWritesStillShareATurn() throws {
        let handler = WritesAnsweredAtTurnEnd()
        try withServer(handler: handler) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send(String(repeating: "POST /w HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", count: 3))
            for _ in 0..<3 { #expect(try client.readResponse().status == 200) }
            #expect(handler.events.withLock { $0 }.prefix(4) == ["handle /w", "handle /w", "handle /w", "answered /w"])
        }
    }

    @Test func pipelinedResponsesLeaveInRequestOrderWhateverOrderTheyFinish() throws {
        let handler = HeldHandler()
        try withServer(handler: handler) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
            for _ in 0..<3 { handler.arrived.wait() }  // all three are worked on at once
            handler.release("/c")
            handler.release("/b")
            handler.release("/a")
            #expect(try client.readResponse().bodyText == "done /a")
            #expect(try client.readResponse().bodyText == "done /b")
            #expect(try client.readResponse().bodyText == "done /c")
        }
    }

    @Test func slowClientIsTimedOutAndOthersAreServedMeanwhile() throws {
        try withServer({ $0.requestTimeout = 0.5 }) { port, _ in
            let slow = try RawHTTPClient(port: port)
            try slow.send("GET /slow HTTP/1.1\r\nHo")
            // Another client is served while the slow one dribbles.
            #expect(try httpRequest(port: port, method: "GET", path: "/fast").status == 200)
            try slow.send("s")
            let response = try slow.readResponse()
            #expect(response.status == 408)
            #expect(try slow.waitForClose())
        }
    }

    @Test func dribblingBytesDoesNotExtendTheRequestDeadline() throws {
        try withServer({ $0.requestTimeout = 1 }) { port, _ in
            let slow = try RawHTTPClient(port: port)
            let started = Date()
            // One byte every 100 ms would take 3 s for this head; the deadline is 1 s from the first.
            let head = Array("GET /slow HTTP/1.1\r\nHost: h\r\nX-Padding: aaaaaaa\r\n\r\n".utf8)
            var closed = false
            for byte in head {
                do { try slow.send([byte]) } catch { closed = true; break }
                Thread.sleep(forTimeInterval: 0.1)  // the client's pace, not synchronisation
                if Date().timeIntervalSince(started) > 2 { break }
            }
            let response = try? slow.readResponse()
            #expect(closed || response?.status == 408)
            #expect(Date().timeIntervalSince(started) < 2.5)
        }
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        try withServer({ $0.idleTimeout = 0.3 }) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(try client.waitForClose())
        }
    }

    @Test func oversizedBodyGets413AndTheConnectionCloses() throws {
        try withServer({ $0.limits.maxBodyBytes = 4096 }) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /r HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Connection") == "close")
            #expect(try client.waitForClose())
        }
    }

    @Test func malformedRequestLineGets400AndClose() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("THIS IS NOT HTTP\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(try client.waitForClose())
            // The server is still fine.
            #expect(try httpRequest(port: port, method: "GET", path: "/").status == 200)
        }
    }

    @Test func errorAfterGoodPipelinedRequestComesAfterItsAnswer() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /ok HTTP/1.1\r\nHost: h\r\n\r\nBROKEN\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(try client.readResponse().status == 400)
            #expect(try client.waitForClose())
        }
    }

    @Test func chunkedBodyIsDecoded() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            #expect(try client.readResponse().bodyText == "POST /c abcde")
        }
    }

    @Test func headAnswersHeadersWithoutBody() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\nGET /g HTTP/1.1\r\nHost: h\r\n\r\n")
            let head = try client.readResponse(bodyExpected: false)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "8")  // what GET would have sent: "HEAD /h "
            // The next response starts right after the head: no stray body bytes in between.
            #expect(try client.readResponse().bodyText == "GET /g ")
        }
    }

    @Test func expectContinueGetsAnInterimResponse() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            #expect(try client.readResponse().status == 100)
            try client.send("body")
            #expect(try client.readResponse().bodyText == "POST /e body")
        }
    }

    @Test func expectContinueWithOversizedBodyGetsFinal413() throws {
        try withServer({ $0.limits.maxBodyBytes = 100 }) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n")
            #expect(try client.readResponse().status == 413)
        }
    }

    @Test func http10ClosesUnlessKeepAlive() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /x HTTP/1.0\r\n\r\n")
            #expect(try client.readResponse().header("Connection") == "close")
            #expect(try client.waitForClose())
        }
    }

    @Test func pastTheCapTheStalestWaitingConnectionMakesRoom() throws {
        try withServer({ $0.maxConnections = 2 }) { port, _ in
            let a = try RawHTTPClient(port: port)
            try a.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try a.readResponse().status == 200)
            let b = try RawHTTPClient(port: port)
            try b.send("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try b.readResponse().status == 200)
            // c finds the cap reached with two idle connections: a, idle longest, is closed for it.
            let c = try RawHTTPClient(port: port)
            try c.send("GET /c HTTP/1.1\r\nHost: h\r\n")  // half a head, as thousands of slowloris sockets would
            #expect(try a.waitForClose())
            // b asks again after c's half head was sent, so the turn that answers b has read c's bytes too.
            try b.send("GET /b2 HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try b.readResponse().bodyText == "GET /b2 ")
            // d: c dribbles a head, b is idle and answered last: c goes first, with a 408, and d is served.
            let d = try RawHTTPClient(port: port)
            try d.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try d.readResponse().bodyText == "GET /d ")
            #expect(try c.readResponse().status == 408)
        }
    }

    @Test func pastTheCapWithEveryConnectionBeingAnsweredANewOneGets503() throws {
        let handler = HeldHandler()
        try withServer({ $0.maxConnections = 2 }, handler: handler) { port, _ in
            let a = try RawHTTPClient(port: port)
            let b = try RawHTTPClient(port: port)
            try a.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
            try b.send("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
            handler.arrived.wait()
            handler.arrived.wait()
            let c = try RawHTTPClient(port: port)
            #expect(try c.readResponse().status == 503)
            handler.release("/a")
            handler.release("/b")
            #expect(try a.readResponse().bodyText == "done /a")
            #expect(try b.readResponse().bodyText == "done /b")
        }
    }

    @Test func shutdownFinishesRequestsInFlightThenStops() throws {
        let handler = HeldHandler()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.accessLog = nil
        let server = HTTPServer(configuration: configuration, handler: handler)
        let port = try server.start()
        let client = try RawHTTPClient(port: port)
        let idle = try RawHTTPClient(port: port)
        try client.send("POST /inflight HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx")
        handler.arrived.wait()
        server.shutdown()
        // Idle connections are closed at once; new ones are refused.
        #expect(try idle.waitForClose())
        #expect(throws: (any Error).self) { _ = try httpRequest(port: port, method: "GET", path: "/late") }
        // The request already being worked on still gets its answer, with Connection: close.
        handler.release("/inflight")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.bodyText == "done /inflight")
        #expect(response.header("Connection") == "close")
        server.waitUntilStopped()
    }

    @Test func streamedBodyIsChunkedToHTTP11() throws {
        final class Counter: HTTPBodyStream, @unchecked Sendable {
            var n = 0
            func next(maxBytes: Int) -> HTTPBodyPiece {
                n += 1
                return n <= 3 ? .bytes(Array("part\(n)\n".utf8)) : .end
            }
        }
        struct Streaming: HTTPHandler {
            func handle(_ request: HTTPRequest, responder: HTTPResponder) {
                responder.respond(HTTPResponse(status: 200, stream: Counter()))
            }
        }
        let handler = Streaming()
        try withServer(handler: handler) { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /s HTTP/1.1\r\nHost: h\r\n\r\nGET /s HTTP/1.1\r\nHost: h\r\n\r\n")
            for _ in 0..<2 {
                let response = try client.readResponse()
                #expect(response.header("Transfer-Encoding") == "chunked")
                #expect(response.bodyText == "part1\npart2\npart3\n")
            }
        }
    }

    @Test func peerHalfCloseStillGetsItsAnswer() throws {
        try withServer { port, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /half HTTP/1.1\r\nHost: h\r\n\r\n")
            client.shutdownWrite()
            #expect(try client.readResponse().bodyText == "GET /half ")
            #expect(try client.waitForClose())
        }
    }
}

private func heldBody(_ response: HTTPResponse) -> [UInt8] {
    if case .bytes(let bytes) = response.body { return bytes }
    return []
}
