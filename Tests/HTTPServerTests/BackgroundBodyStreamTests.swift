import Dispatch
import Foundation
import Locking
import Testing
import RawHTTPClient
@testable import HTTPServer

/// What a producer was asked for, and a gate that holds it (a scan in progress).
private final class ProducerProbe: @unchecked Sendable {
    let calls = Locked(0)
    let gate = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)
}

/// Something a producer closure holds, as an export holds its log cursor: gone once the
/// stream lets go of its producer.
private final class HeldResource: @unchecked Sendable {
    let freed: Locked<Bool>
    init(_ freed: Locked<Bool>) { self.freed = freed }
    deinit { freed.withLock { $0 = true } }
}

/// `/scan`: a body whose first piece waits for the probe's gate; `/endless`: pieces of 48 KB for
/// ever, counted; `/quick`: a plain answer.
private struct StreamingHandler: HTTPHandler {
    let producers: BodyProducers
    let scan = ProducerProbe()
    let endless = ProducerProbe()

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        switch request.path {
        case "/scan":
            var sent = 0
            let stream = producers.stream { [scan] _ in
                if sent == 0 {
                    scan.entered.signal()
                    scan.gate.wait()
                }
                sent += 1
                return sent <= 3 ? Array("piece \(sent)\n".utf8) : nil
            }!
            responder.respond(HTTPResponse(status: 200, stream: stream))
        case "/endless":
            let stream = producers.stream { [endless] maxBytes in
                endless.calls.withLock { $0 += 1 }
                return [UInt8](repeating: UInt8(ascii: "x"), count: maxBytes)
            }!
            responder.respond(HTTPResponse(status: 200, stream: stream))
        default:
            responder.respond(.text(200, "quick"))
        }
    }
}

private func withServer(_ handler: StreamingHandler, _ body: (UInt16) throws -> Void) throws {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configuration.accessLog = nil
    let server = HTTPServer(configuration: configuration, handler: handler)
    let port = try server.start()
    defer {
        handler.scan.gate.signal()
        server.shutdown()
        server.waitUntilStopped()
        handler.producers.stop()
    }
    try body(port)
}

@Suite struct BackgroundBodyStreamTests {
    @Test func aRequestIsAnsweredWhileAScanIsInProgress() throws {
        let handler = StreamingHandler(producers: BodyProducers(named: "test-export", threads: 1, maxStreams: 4))
        try withServer(handler) { port in
            let scanning = try RawHTTPClient(port: port)
            try scanning.send("GET /scan HTTP/1.1\r\nHost: h\r\n\r\n")
            handler.scan.entered.wait()
            // The scan holds its producer thread; the loop still answers everyone else.
            for _ in 0..<5 {
                let other = try RawHTTPClient(port: port)
                try other.send("GET /quick HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try other.readResponse().bodyText == "quick")
            }
            handler.scan.gate.signal()
            let response = try scanning.readResponse()
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.bodyText == "piece 1\npiece 2\npiece 3\n")
        }
    }

    /// Requests pipelined behind a stream whose producer is busy, the last one cut in half: they
    /// wait their turn (answers leave in order), and nothing spins while they do.
    @Test func requestsPipelinedBehindAWaitingStreamWaitTheirTurn() throws {
        let handler = StreamingHandler(producers: BodyProducers(named: "test-export", threads: 1, maxStreams: 4))
        try withServer(handler) { port in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /scan HTTP/1.1\r\nHost: h\r\n\r\nGET /quick HTTP/1.1\r\nHost: h\r\n\r\nGET /qu")
            handler.scan.entered.wait()
            // Another client is answered while this connection waits on its producer.
            let other = try RawHTTPClient(port: port)
            try other.send("GET /quick HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try other.readResponse().bodyText == "quick")
            handler.scan.gate.signal()
            #expect(try client.readResponse().bodyText == "piece 1\npiece 2\npiece 3\n")
            #expect(try client.readResponse().bodyText == "quick")
            try client.send("ick HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().bodyText == "quick")
        }
    }

    @Test func aStalledReaderHoldsNoMoreThanItsBound() throws {
        let handler = StreamingHandler(producers: BodyProducers(named: "test-export", threads: 1, maxStreams: 4, pieceBytes: 48 << 10))
        try withServer(handler) { port in
            let stalled = try RawHTTPClient(port: port)
            try stalled.send("GET /endless HTTP/1.1\r\nHost: h\r\n\r\n")
            // The client reads nothing. Once the socket, the connection's 256 KB and the stream's
            // two pieces are full, the producer is not called again.
            // Polled until the count stops moving: a producer that ignored its reader would go on
            // until the deadline, gigabytes past the bound asserted below.
            var calls = -1
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                handler.producers.waitUntilIdle()
                let now = handler.endless.calls.withLock { $0 }
                if now == calls { break }
                calls = now
                Thread.sleep(forTimeInterval: 0.2)
            }
            let produced = calls * (48 << 10)
            // The kernel's send and receive buffers on loopback (a few MB at most), 256 KB in the
            // connection, 1 MB pulled in one flush, and two pieces.
            #expect(produced < 16 << 20, "produced \(produced) bytes for a reader that read nothing")
            // Other clients are not affected.
            let other = try RawHTTPClient(port: port)
            try other.send("GET /quick HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try other.readResponse().bodyText == "quick")
            #expect(handler.producers.openStreams == 1)
        }
        #expect(handler.producers.openStreams == 0)
    }

    @Test func aClosedConnectionStopsItsProducerAndFreesWhatItHeld() throws {
        let producers = BodyProducers(named: "test-export", threads: 1, maxStreams: 4)
        defer { producers.stop() }
        let freed = Locked(false)
        let resource = Locked<HeldResource?>(HeldResource(freed))
        let stream = producers.stream { [resource] maxBytes in
            _ = resource
            return [UInt8](repeating: 0, count: maxBytes)
        }!
        resource.withLock { $0 = nil }
        #expect(producers.openStreams == 1)
        stream.cancel()
        producers.waitUntilIdle()
        #expect(producers.openStreams == 0)
        #expect(freed.withLock { $0 })
        #expect(stream.next(maxBytes: 1 << 16) == .pending || stream.bufferedBytes == 0)
    }

    @Test func pastMaxStreamsNoStreamIsMade() throws {
        let producers = BodyProducers(named: "test-export", threads: 1, maxStreams: 2)
        defer { producers.stop() }
        let first = producers.stream { _ in nil }
        let second = producers.stream { _ in nil }
        #expect(first != nil && second != nil)
        #expect(producers.stream { _ in nil } == nil)
        // One read to its end gives its place back.
        #expect(first!.readAll() == [])
        #expect(producers.openStreams == 1)
        #expect(producers.stream { _ in nil } != nil)
        _ = second
    }

    @Test func aStreamDroppedUnsentGivesItsPlaceBack() throws {
        let producers = BodyProducers(named: "test-export", threads: 1, maxStreams: 1)
        defer { producers.stop() }
        do {
            let stream = producers.stream { _ in Array("x".utf8) }
            #expect(stream != nil)
            #expect(producers.openStreams == 1)
            producers.waitUntilIdle()
        }
        #expect(producers.openStreams == 0)
    }

    @Test func emptyPiecesAreNotSentAndTheBodyArrivesWhole() throws {
        let producers = BodyProducers(named: "test-export", threads: 2, maxStreams: 8)
        defer { producers.stop() }
        // Ten streams, each passing over nine looks in ten: every stream moves and ends whole.
        let streams = (0..<8).map { n in
            var look = 0
            return producers.stream { _ in
                look += 1
                guard look <= 1000 else { return nil }
                return look % 10 == 0 ? Array("\(n):\(look)\n".utf8) : []
            }!
        }
        for (n, stream) in streams.enumerated() {
            let expected = (1...100).map { "\(n):\($0 * 10)\n" }.joined()
            #expect(String(decoding: stream.readAll(), as: UTF8.self) == expected)
        }
        #expect(producers.openStreams == 0)
    }
}
