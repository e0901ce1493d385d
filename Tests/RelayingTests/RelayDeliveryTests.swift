import Dispatch
import Foundation
import HTTPServer
import Locking
import LogConsumer
import Primitives
import RecordLog
import Relays
import Testing
@testable import Relaying

/// One destination's delivery from a real log to a real HTTP receiver on loopback (this
/// project's own server, scripted): what arrives, byte for byte and with which headers, and what
/// each kind of answer does. Tests wait on the delivery's turns, never on a timer.
@Suite struct RelayDeliveryTests {
    static let kind = RecordKind(3, name: "postback")
    /// Records of another kind, which no destination takes.
    static let other = RecordKind(1, name: "report")

    /// A receiver whose answers a test scripts, keeping everything it was sent.
    final class Receiver: HTTPHandler, Sendable {
        struct Delivery: Sendable {
            var body: [UInt8]
            var headers: [String: String]
        }
        let received = Locked<[Delivery]>([])
        let answer: @Sendable (Int) -> HTTPResponse?
        let server: HTTPServer

        /// `answer(n)`: the answer to the n-th request (0-based); nil holds it for three seconds.
        init(answer: @escaping @Sendable (Int) -> HTTPResponse? = { _ in HTTPResponse(status: 204) }) throws {
            self.answer = answer
            var configuration = HTTPServerConfiguration()
            configuration.host = "127.0.0.1"
            configuration.port = 0
            configuration.accessLog = nil
            let box = Locked<HTTPHandler?>(nil)
            server = HTTPServer(configuration: configuration, handler: Forward(box: box))
            box.withLock { $0 = self }
            _ = try server.start()
        }

        var url: String { "http://127.0.0.1:\(server.port!)/copies" }

        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.lowercased()] = field.value }
            let n = received.withLock { all -> Int in
                all.append(Delivery(body: request.body, headers: headers))
                return all.count - 1
            }
            if let response = answer(n) {
                responder.respond(response)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + 3) { responder.respond(HTTPResponse(status: 503)) }
            }
        }

        func stop() {
            server.shutdown()
            server.waitUntilStopped()
        }

        private struct Forward: HTTPHandler {
            let box: Locked<HTTPHandler?>
            func handle(_ request: HTTPRequest, responder: HTTPResponder) { box.withLock { $0 }?.handle(request, responder: responder) }
        }
    }

    /// The turns a delivery has finished, signalled as they end.
    final class Turns: Sendable {
        let all = Locked<[LogTurn]>([])
        private let signal = DispatchSemaphore(value: 0)
        var observe: @Sendable (LogTurn) -> Void { { turn in self.all.withLock { $0.append(turn) }; self.signal.signal() } }

        func until(_ condition: () -> Bool) -> Bool {
            let deadline = DispatchTime.now() + 60
            while !condition() {
                guard DispatchTime.now() < deadline, signal.wait(timeout: deadline) == .success else { return condition() }
            }
            return true
        }
    }

    struct Setup {
        let directory: String
        let store: RecordLog
        let bodies: [[UInt8]]
    }

    /// A log of `copies` postback-kind records (each body `{"n":i}` with a byte past ASCII),
    /// with a record of another kind between each two.
    static func log(copies: Int, directory: String = NSTemporaryDirectory() + "relay-" + UUID().uuidString,
                    segmentBytes: Int? = nil) throws -> Setup {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = try RecordLog(directory: directory, segments: segmentBytes.map { SegmentPolicy(maxBytes: $0, rollsDaily: false) } ?? SegmentPolicy())
        var bodies: [[UInt8]] = []
        let done = DispatchGroup()
        for i in 0..<copies {
            let body = Array("{\"n\":\(i),\"note\":\"é\"}".utf8)
            bodies.append(body)
            for (kind, bytes) in [(kind, body), (other, Array("other".utf8))] {
                done.enter()
                store.append(kind: kind, tag: 2, completion: { _ in done.leave() }) { $0.append(contentsOf: bytes) }
                // One commit each: a segment is sealed between commits, never inside one.
                if segmentBytes != nil { done.wait() }
            }
        }
        done.wait()
        return Setup(directory: directory, store: store, bodies: bodies)
    }

    static let select: @Sendable (RecordLog.RecordView) -> RelayCopy? = { record in
        guard record.kind == kind.number else { return nil }
        return RelayCopy(recordID: record.id, receivedAt: record.time, protocolName: "skadnetwork", contentType: "application/json",
                         body: Array(record.payload))
    }

    static func delivery(_ setup: Setup, url: String, secret: String? = nil, internal: Bool = true, turns: Turns,
                         transport: any RelayTransport = URLSessionRelayTransport(timeout: 5), connections: Int = 4,
                         clock: @escaping @Sendable () -> Timestamp = { Timestamp(millisecondsSinceEpoch: 1_795_000_000_000) },
                         deadAfter: Double = RelayDelivery.defaultDeadAfter,
                         resolve: @escaping @Sendable (String) -> [IPAddress]? = HostResolver.addresses(of:)) -> RelayDelivery {
        let destination = RelayDestination(name: "partner", url: url, appID: 1, protocols: [.skadnetwork], internal: `internal`, secret: secret)
        return RelayDelivery(destination: destination, store: setup.store, node: "node-a", directory: setup.directory,
                             select: select, transport: transport, resolve: resolve, clock: clock,
                             interval: 0.05, retry: RetrySchedule(first: 0.01, longest: 0.05), deadAfter: deadAfter, connections: connections,
                             announce: { _, _ in },
                             observer: turns.observe)
    }

    @Test func everyCopyArrivesByteForByteInTheLogsOrderWithItsHeaders() throws {
        let setup = try Self.log(copies: 20)
        let receiver = try Receiver()
        defer { receiver.stop() }
        let turns = Turns()
        // One at a time: several in flight leave in the log's order, and may arrive in another.
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns, transport: URLSessionRelayTransport(timeout: 5, connections: 1),
                                     connections: 1)
        delivery.start()
        #expect(turns.until { receiver.received.withLock { $0.count } >= 20 && delivery.status.delivered == 20 })
        delivery.stop()
        let received = receiver.received.withLock { $0 }
        #expect(received.map(\.body) == setup.bodies, "the bodies as stored, in order, and nothing of the other kind")
        let ids = received.map { $0.headers["x-attribution-delivery"] ?? "" }
        #expect(Set(ids).count == 20 && ids.allSatisfy { $0.count == 32 })
        for delivery in received {
            #expect(delivery.headers["content-type"] == "application/json")
            #expect(delivery.headers["x-attribution-protocol"] == "skadnetwork")
            #expect(delivery.headers["x-attribution-received-at"]?.hasPrefix("20") == true)
            #expect(delivery.headers["x-attribution-signature"] == nil, "no secret, no signature")
            #expect(delivery.headers["cookie"] == nil)
        }
        setup.store.close()
    }

    @Test func aDestinationFailingEveryOtherTimeGetsEveryCopyAndItsRepeatsTheSameID() throws {
        let setup = try Self.log(copies: 10)
        let receiver = try Receiver { n in HTTPResponse(status: n % 2 == 0 ? 500 : 200) }
        defer { receiver.stop() }
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 10 })
        delivery.stop()
        let received = receiver.received.withLock { $0 }
        // Every copy taken (the odd answers are 200s); those sent beside a 500 may have gone again.
        #expect(Set(received.indices.filter { $0 % 2 == 1 }.map { received[$0].body }) == Set(setup.bodies))
        var idsByBody: [[UInt8]: Set<String>] = [:]
        for delivery in received { idsByBody[delivery.body, default: []].insert(delivery.headers["x-attribution-delivery"] ?? "") }
        #expect(idsByBody.count == 10 && idsByBody.values.allSatisfy { $0.count == 1 }, "a repeat carries its first attempt's id")
        #expect(turns.all.withLock { $0 }.contains(.failed))
        setup.store.close()
    }

    @Test func aRefusalIsRecordedOnceAndNeverSentAgain() throws {
        let setup = try Self.log(copies: 3)
        let big = [UInt8](repeating: UInt8(ascii: "x"), count: 50 << 20)
        // The second copy is refused, with an answer far larger than anything kept.
        let receiver = try Receiver { n in n == 1 ? HTTPResponse(status: 422, body: Array("bad field".utf8) + big) : HTTPResponse(status: 200) }
        defer { receiver.stop() }
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 2 && delivery.status.refused == 1 })
        delivery.stop()
        #expect(receiver.received.withLock { $0.count } == 3)
        let refusal = try #require(delivery.status.refusals.first)
        #expect(refusal.status == 422 && refusal.bodyStart.hasPrefix("bad field") && refusal.bodyStart.utf8.count <= 512)
        setup.store.close()
    }

    @Test func aRedirectIsARefusalNeverFollowed() throws {
        let setup = try Self.log(copies: 1)
        let elsewhere = try Receiver()
        defer { elsewhere.stop() }
        let receiver = try Receiver { _ in HTTPResponse(status: 301, headers: ["Location": elsewhere.url]) }
        defer { receiver.stop() }
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.refused == 1 })
        delivery.stop()
        #expect(elsewhere.received.withLock { $0.isEmpty }, "the redirect's target was never sent anything")
        #expect(delivery.status.refusals.first?.status == 301)
        setup.store.close()
    }

    @Test func aRetryAfterIsWaitedForAndTheCopyThenDelivered() throws {
        let setup = try Self.log(copies: 1)
        let receiver = try Receiver { n in n == 0 ? HTTPResponse(status: 429, headers: ["Retry-After": "0"]) : HTTPResponse(status: 200) }
        defer { receiver.stop() }
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 1 })
        delivery.stop()
        #expect(turns.all.withLock { $0 }.first == .retryAfter(0))
        setup.store.close()
    }

    @Test func aDestinationDownThenBackGetsEverythingAndOneThatNeverAnswersIsGivenUp() throws {
        let setup = try Self.log(copies: 5)
        // Nothing listens at first: a port taken and closed.
        let closed = try Receiver()
        let url = closed.url
        closed.stop()
        let turns = Turns()
        let delivery = Self.delivery(setup, url: url, turns: turns)
        delivery.start()
        #expect(turns.until { turns.all.withLock { $0.filter { $0 == .failed }.count } >= 3 })
        #expect(delivery.status.retrying && delivery.status.lastError != nil && delivery.status.delivered == 0)
        delivery.stop()
        // Back, on another port: a delivery for the new URL starts from the beginning of the log.
        let receiver = try Receiver()
        defer { receiver.stop() }
        let again = Self.delivery(setup, url: receiver.url, turns: turns)
        again.start()
        #expect(turns.until { again.status.delivered == 5 })
        again.stop()
        #expect(receiver.received.withLock { $0.map(\.body) }.sorted { $0.lexicographicallyPrecedes($1) } == setup.bodies.sorted { $0.lexicographicallyPrecedes($1) })
        setup.store.close()
    }

    @Test func aReceiverThatHoldsTheConnectionIsTimedOutAndTriedAgain() throws {
        let setup = try Self.log(copies: 2)
        // The first request is held past the relay's time-out (then answered, so that the
        // receiver can stop without waiting out its grace period).
        let receiver = try Receiver { n in n == 0 ? nil : HTTPResponse(status: 200) }
        defer { receiver.stop() }
        let turns = Turns()
        // One at a time, so that the copy held is the first.
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns, transport: URLSessionRelayTransport(timeout: 1, connections: 1),
                                     connections: 1)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 2 })
        delivery.stop()
        #expect(receiver.received.withLock { $0.count } == 3)
        setup.store.close()
    }

    @Test func aRestartGoesOnFromTheSavedCursorAndLosesNothing() throws {
        let setup = try Self.log(copies: 30)
        let receiver = try Receiver()
        defer { receiver.stop() }
        let turns = Turns()
        let first = Self.delivery(setup, url: receiver.url, turns: turns)
        first.start()
        #expect(turns.until { first.status.delivered >= 1 })
        first.stop()
        let second = Self.delivery(setup, url: receiver.url, turns: turns)
        second.start()
        #expect(turns.until { receiver.received.withLock { Set($0.map(\.body)).count } == 30 })
        second.stop()
        let received = receiver.received.withLock { $0 }
        // Everything once at least; a copy sent twice (stopped before its cursor was saved) with one id.
        #expect(Set(received.map(\.body)) == Set(setup.bodies))
        var ids: [[UInt8]: Set<String>] = [:]
        for delivery in received { ids[delivery.body, default: []].insert(delivery.headers["x-attribution-delivery"] ?? "") }
        #expect(ids.values.allSatisfy { $0.count == 1 })
        setup.store.close()
    }

    @Test func aSecretSignsEachDeliveryAsTheReceiverChecksIt() throws {
        let setup = try Self.log(copies: 1)
        let receiver = try Receiver()
        defer { receiver.stop() }
        let turns = Turns()
        let secret = "0123456789abcdef0123456789abcdef"
        let delivery = Self.delivery(setup, url: receiver.url, secret: secret, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 1 })
        delivery.stop()
        let got = try #require(receiver.received.withLock { $0.first })
        let header = try #require(got.headers["x-attribution-signature"])
        // Checked as a receiver would, with Python's own hmac module.
        #expect(header == "t=1795000000,v1=" + (try IndependentHMAC.sha256Hex(key: Array(secret.utf8), message: Array("1795000000.".utf8) + got.body)))
        setup.store.close()
    }

    @Test func theDeliveryIDDependsOnTheCopyItsProtocolTheNodeAndTheDestinationAlone() {
        let id = RelayHeaders.deliveryID(node: "a", destination: "p", protocolName: "skadnetwork", recordID: 7)
        #expect(id == RelayHeaders.deliveryID(node: "a", destination: "p", protocolName: "skadnetwork", recordID: 7))
        #expect(id != RelayHeaders.deliveryID(node: "a", destination: "p", protocolName: "skadnetwork", recordID: 8))
        #expect(id != RelayHeaders.deliveryID(node: "b", destination: "p", protocolName: "skadnetwork", recordID: 7))
        #expect(id != RelayHeaders.deliveryID(node: "a", destination: "q", protocolName: "skadnetwork", recordID: 7))
        // Report 7 and postback 7 are two records: ids are counted per kind.
        #expect(id != RelayHeaders.deliveryID(node: "a", destination: "p", protocolName: "pcm", recordID: 7))
    }

    @Test func aNameThatResolvesInsideIsNeverSentToUnlessTheDestinationMayBeInternal() throws {
        let setup = try Self.log(copies: 2)
        let receiver = try Receiver()
        defer { receiver.stop() }
        let url = receiver.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let turns = Turns()
        let outside = Self.delivery(setup, url: url, internal: false, turns: turns)
        outside.start()
        #expect(turns.until { turns.all.withLock { $0.filter { $0 == .failed }.count } >= 2 })
        outside.stop()
        #expect(receiver.received.withLock { $0.isEmpty })
        #expect(outside.status.lastError?.contains("loopback") == true, "\(String(describing: outside.status.lastError))")
        let inside = Self.delivery(setup, url: url, internal: true, turns: turns)
        inside.start()
        #expect(turns.until { inside.status.delivered == 2 })
        inside.stop()
        setup.store.close()
    }

    @Test func aReceiverThatAnswersBeforeReadingTheBodyHasTakenTheCopy() throws {
        // Its 200 is its answer: the relay promises to send, not that it was read.
        let setup = try Self.log(copies: 2)
        let receiver = try RawReceiver(.answerBeforeBody, times: 100)
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 2 })
        delivery.stop()
        _ = receiver.stop()
        setup.store.close()
    }

    @Test func aConnectionResetMidBodyIsTriedAgainAndTheCopyArrivesWhole() throws {
        let setup = try Self.log(copies: 2)
        let receiver = try RawReceiver(.resetMidBody, times: 2)
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == 2 })
        delivery.stop()
        let bodies = receiver.stop()
        #expect(bodies.sorted { $0.lexicographicallyPrecedes($1) } == setup.bodies.sorted { $0.lexicographicallyPrecedes($1) }, "each whole, once taken")
        #expect(turns.all.withLock { $0 }.contains(.failed))
        setup.store.close()
    }

    @Test func copiesRetentionRemovedBeforeTheyWereTakenAreSaidToHaveExpired() throws {
        // Small segments: the first ones are removed before the destination ever answers.
        let setup = try Self.log(copies: 40, segmentBytes: 1024)
        let removed = setup.store.removeSegments { _ in true }
        #expect(!removed.isEmpty)
        let kept = Set(setup.store.scanRecordsBodies(of: Self.kind))
        let receiver = try Receiver()
        defer { receiver.stop() }
        let turns = Turns()
        let delivery = Self.delivery(setup, url: receiver.url, turns: turns)
        delivery.start()
        #expect(turns.until { delivery.status.delivered == kept.count })
        delivery.stop()
        #expect(delivery.status.expirations == 1)
        #expect(Set(receiver.received.withLock { $0.map(\.body) }) == kept, "what the log keeps, all of it")
        #expect(kept.count < 40)
        setup.store.close()
    }
}

extension RecordLog {
    /// The payloads of `kind`'s records still kept.
    func scanRecordsBodies(of kind: RecordKind) -> [[UInt8]] {
        var bodies: [[UInt8]] = []
        scanRecords(of: kind, through: durablePrefix.end) { bodies.append(Array($0.payload)); return true }
        return bodies
    }
}
