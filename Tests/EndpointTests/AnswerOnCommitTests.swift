import Foundation
import HTTPServer
import Locking
import RecordLog
import Testing
@testable import Endpoint

/// The one way an answer waits for the disk, through a real event loop and a real log: a kept
/// record is answered after its flush, what others see follows the flush, and a record not kept
/// gives back what it claimed and is answered 503.
extension AnswerOnCommitTests.Traced {
    func answer(_ record: RecordLog.AppendedRecord) -> HTTPResponse {
        trace.add("answer \(record.id)")
        return HTTPResponse(status: 201, body: Array("kept \(record.id)".utf8))
    }
    func stored(_ record: RecordLog.AppendedRecord) { trace.add("stored \(record.id)") }
    func undo() { trace.add("undo") }
}

@Suite struct AnswerOnCommitTests {
    /// What the steps did, in order.
    final class Trace: Sendable {
        let events = Locked<[String]>([])
        func add(_ event: String) { events.withLock { $0.append(event) } }
    }

    /// An answer that writes each step it is told into the trace.
    protocol Traced: CommittedAnswer {
        var trace: Trace { get }
    }

    struct Kept: Traced {
        let trace: Trace
        static var answersWhileFlushing: Bool { false }
    }

    struct KeptWhileFlushing: Traced {
        let trace: Trace
        static var answersWhileFlushing: Bool { true }
    }

    /// Appends one record per request with the answer's steps; commits at the turn's end, as the endpoint does.
    final class Appending: HTTPHandler, @unchecked Sendable {
        let store: RecordLog
        let metrics = EndpointMetrics()
        let trace = Trace()
        let whileFlushing: Bool

        init(store: RecordLog, whileFlushing: Bool) {
            self.store = store
            self.whileFlushing = whileFlushing
        }

        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            let commit = AnswerOnCommit(responder: responder, metrics: metrics, failure: "the test record could not be stored")
            let steps = whileFlushing ? commit.steps(KeptWhileFlushing(trace: trace)) : commit.steps(Kept(trace: trace))
            store.append(kind: .report, tag: 0, steps: steps) { $0.append(contentsOf: request.body) }
        }

        func endTurn() -> Bool {
            store.commitQueued(overlappingFlush: true)
            return false
        }
    }

    func serve(_ handler: Appending) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        return server
    }

    @Test(arguments: [false, true])
    func aKeptRecordIsAnsweredOnceOnDiskAndSeenAfterItsFlush(whileFlushing: Bool) throws {
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        defer { store.close() }
        let handler = Appending(store: store, whileFlushing: whileFlushing)
        let server = try serve(handler)
        defer { server.shutdown(); server.waitUntilStopped() }
        let response = try #require(server.respond(to: HTTPRequest(method: "POST", target: "/", body: Array("one".utf8))))
        #expect(response.status == 201)
        // Answered: the record is on disk, whichever step made the answer.
        #expect(store.count(of: .report) == 1)
        let events = handler.trace.events.withLock { $0 }
        // Made while the flush may be in flight, or only once it held; what others see always waits for it.
        #expect(events == (whileFlushing ? ["answer 1", "stored 1"] : ["stored 1", "answer 1"]))
        #expect(handler.metrics.prometheusText(store: store, rejections: RejectionLog()).contains("attribution_store_write_failures_total 0\n"))
    }

    @Test(arguments: [false, true])
    func aRecordNotKeptGivesBackWhatItClaimedAndIsAnswered503(whileFlushing: Bool) throws {
        let store = try RecordLog(directory: temporaryDirectory(), committer: .owner)
        let handler = Appending(store: store, whileFlushing: whileFlushing)
        let server = try serve(handler)
        defer { server.shutdown(); server.waitUntilStopped() }
        store.close()  // every append from now on fails
        let response = try #require(server.respond(to: HTTPRequest(method: "POST", target: "/", body: Array("lost".utf8))))
        #expect(response.status == 503)
        guard case .bytes(let body) = response.body else { Issue.record("a stream"); return }
        #expect(String(decoding: body, as: UTF8.self).contains("the test record could not be stored"))
        #expect(handler.trace.events.withLock { $0 } == ["undo"])
        #expect(handler.metrics.prometheusText(store: store, rejections: RejectionLog()).contains("attribution_store_write_failures_total 1\n"))
        #expect(store.count(of: .report) == 0)
    }
}
