import Dispatch
import Foundation
import Glibc
import Locking
import RawHTTPClient
import Testing
@testable import ClickHouseExport

/// A TCP server that reads each request whole and answers with scripted bytes, for answers no
/// well-behaved server gives: cut, garbage, endless, or none at all.
final class ScriptedServer: @unchecked Sendable {
    enum Answer: Sendable {
        case bytes([UInt8])
        /// These bytes, then a reset instead of a close.
        case bytesThenReset([UInt8])
        /// Say nothing until the test lets go.
        case silence
    }

    let port: UInt16
    private let listener: Int32
    private let answer: Answer
    private let group = DispatchGroup()
    /// Each request as received: head and body.
    let requests = Locked<[[UInt8]]>([])
    let received = DispatchSemaphore(value: 0)
    private let letGo = DispatchSemaphore(value: 0)

    private init(_ answer: Answer) throws {
        self.answer = answer
        let (fd, port) = try Self.boundSocket()
        listener = fd
        self.port = port
        guard listen(fd, 8) == 0 else { throw RawHTTPError("cannot listen") }
    }

    /// A TCP socket bound to a free loopback port, not yet listening.
    static func boundSocket() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else {
            if fd >= 0 { close(fd) }
            throw RawHTTPError("cannot bind")
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    static func start(_ answer: Answer) throws -> ScriptedServer {
        let server = try ScriptedServer(answer)
        server.serve()
        return server
    }

    private func serve() {
        group.enter()
        Thread { [self] in
            defer { group.leave() }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            requests.withLock { $0.append(readRequest(connection)) }
            received.signal()
            switch answer {
            case .bytes(let bytes):
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .bytesThenReset(let bytes):
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var abort = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
            case .silence:
                letGo.wait()
            }
        }.start()
    }

    /// Reads until the head's end and as many bytes after it as its Content-Length says.
    private func readRequest(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var needed: Int?
        while needed.map({ bytes.count < $0 }) ?? true {
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
            guard needed == nil, let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { continue }
            let length = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            needed = end.upperBound + length
        }
        return bytes
    }

    func stop() {
        letGo.signal()
        // Closed once its thread is done: closed before, the descriptor could be another
        // socket's by the time that thread calls `accept`.
        shutdown(listener, Int32(SHUT_RDWR))
        group.wait()
        close(listener)
    }

    var target: ClickHouseTarget {
        get throws { try ClickHouseTarget("http://127.0.0.1:\(port)/attribution", credentials: .init(user: "exporter", password: "pa:ss")) }
    }
}

/// The export's own HTTP sender against answers a ClickHouse, a proxy or a broken network can give.
@Suite struct ClickHouseClientTests {
    func answer(_ text: String, body: [UInt8]? = nil) throws -> (ClickHouseClient.Outcome, [UInt8]) {
        let server = try ScriptedServer.start(.bytes(Array(text.utf8)))
        defer { server.stop() }
        let client = ClickHouseClient(target: try server.target, timeout: 5)
        let outcome = client.run("INSERT INTO attribution.pcm_reports FORMAT JSONEachRow", body: body ?? [])
        return (outcome, server.requests.withLock { $0.first ?? [] })
    }

    @Test func theRequestCarriesTheStatementCredentialsAndTheBodyByteForByte() throws {
        var body: [UInt8] = []
        for i in 0..<40_000 { body.append(contentsOf: "{\"node\":\"a\",\"id\":\(i)}\n".utf8) }
        let (outcome, request) = try answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", body: body)
        #expect(outcome == .done(""))
        let text = String(decoding: request, as: UTF8.self)
        #expect(text.hasPrefix("POST /?query=INSERT%20INTO%20attribution.pcm_reports%20FORMAT%20JSONEachRow HTTP/1.1\r\n"))
        #expect(text.contains("\r\nAuthorization: Basic \(Data("exporter:pa:ss".utf8).base64EncodedString())\r\n"))
        #expect(text.contains("\r\nContent-Length: \(body.count)\r\n"))
        #expect(Array(request.suffix(body.count)) == body)
    }

    @Test func chunkedAndLengthlessAnswersAreReadWhole() throws {
        #expect(try answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n12\r\n3;ext=1\r\n3\n4\r\n0\r\n\r\n").0 == .done("123\n4"))
        #expect(try answer("HTTP/1.0 200 OK\r\n\r\n5\t6\n").0 == .done("5\t6\n"))
        let missing = "Code: 60, e.displayText() = DB::Exception: Table attribution.pcm_reports doesn't exist."
        #expect(try answer("HTTP/1.1 404 Not Found\r\nContent-Length: \(missing.utf8.count)\r\n\r\n\(missing)").0 == .missingTable(missing))
        let refused = "Code: 27, e.displayText() = DB::Exception: Cannot parse input"
        #expect(try answer("HTTP/1.1 500 Internal\r\nContent-Length: \(refused.utf8.count)\r\n\r\n\(refused)").0 == .refused(refused))
    }

    @Test(arguments: [
        "", "garbage\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 99999 Big\r\n\r\n", "SMTP 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ncut short", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort",
        "HTTP/1.1 200 OK\r\nX: " + String(repeating: "h", count: 70_000) + "\r\n\r\n",
    ])
    func aBrokenAnswerIsUnavailableNeverATrapOrASuccess(_ text: String) throws {
        let outcome = try answer(text).0
        guard case .unavailable = outcome else {
            Issue.record("\(outcome)")
            return
        }
    }

    @Test func aServerThatNeverAnswersTimesOut() throws {
        let server = try ScriptedServer.start(.silence)
        defer { server.stop() }
        let client = ClickHouseClient(target: try server.target, timeout: 0.3)
        let outcome = client.run("SELECT 1")
        #expect(outcome == .unavailable("timed out waiting for the server"))
    }

    @Test func stoppingEndsAStatementInFlightAndRefusesTheNext() throws {
        let server = try ScriptedServer.start(.silence)
        defer { server.stop() }
        let client = ClickHouseClient(target: try server.target, timeout: 60)
        let outcome = Locked<ClickHouseClient.Outcome?>(nil)
        let done = DispatchGroup()
        done.enter()
        Thread {
            outcome.withLock { $0 = client.run("SELECT 1") }
            done.leave()
        }.start()
        #expect(server.received.wait(timeout: .now() + 10) == .success)
        client.stop()
        #expect(done.wait(timeout: .now() + 10) == .success)
        if case .unavailable = outcome.withLock({ $0 }) {} else { Issue.record("\(String(describing: outcome.withLock { $0 }))") }
        #expect(client.run("SELECT 1") == .unavailable("the export is stopping"))
    }

    @Test func aPortNobodyListensOnIsUnavailable() throws {
        // Bound and never listening, and kept so while the test runs: no other test can take it.
        let (fd, port) = try ScriptedServer.boundSocket()
        defer { close(fd) }
        let target = try ClickHouseTarget("http://127.0.0.1:\(port)/attribution", credentials: nil)
        if case .unavailable = ClickHouseClient(target: target, timeout: 2).run("SELECT 1") {} else { Issue.record("a closed port") }
    }

    @Test func aProxysContinueIsNotTheAnswer() throws {
        #expect(try answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").0 == .done("ok"))
    }

    @Test func anAnswerCutByAResetIsNotTakenForAWholeOne() throws {
        let server = try ScriptedServer.start(.bytesThenReset(Array("HTTP/1.1 200 OK\r\n\r\n1\n2\n".utf8)))
        defer { server.stop() }
        if case .unavailable = ClickHouseClient(target: try server.target, timeout: 5).run("SELECT 1") {} else {
            Issue.record("a reset is not the end of an answer")
        }
    }

    @Test(arguments: ["Content-Length: 2000\r\n\r\n" + String(repeating: "A", count: 2000),
                      "Transfer-Encoding: chunked\r\n\r\n7D0\r\n" + String(repeating: "A", count: 2000) + "\r\n0\r\n\r\n",
                      "\r\n" + String(repeating: "A", count: 200_000)])
    func aResponseOverTheLimitIsRefused(_ rest: String) throws {
        let server = try ScriptedServer.start(.bytes(Array(("HTTP/1.1 200 OK\r\n" + rest).utf8)))
        defer { server.stop() }
        let connection = try RawHTTPClient(port: server.port, host: "localhost", timeout: 5)
        connection.maxResponseBytes = 1000
        try connection.send("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        #expect(throws: RawHTTPError.self) { try connection.readResponse() }
    }
}
