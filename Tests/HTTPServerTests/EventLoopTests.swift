import Dispatch
import Foundation
import Locking
import Testing
@testable import HTTPServer

/// The event loop on its own: a listener on port 0, the loop on a thread of its own, and
/// requests handed to it in process (`inject`), so that each test watches one of the loop's
/// promises to its handler: where `handle` and `endTurn` run, when a turn comes, what happens to
/// answers given during `endTurn`, and what a stop does to requests still waiting.
@Suite struct EventLoopTests {
    /// A handler whose steps a test scripts: what `handle` does with a responder, what `endTurn`
    /// does and returns. Every step is recorded with the thread it ran on.
    final class ScriptedHandler: HTTPHandler, Sendable {
        let responders = Locked<[HTTPResponder]>([])
        let threads = Locked<Set<String>>([])
        let endTurns = Locked(0)
        let turnEnded = DispatchSemaphore(value: 0)
        let onHandle: @Sendable (HTTPRequest, HTTPResponder) -> Void
        let onEndTurn: @Sendable (ScriptedHandler) -> Bool

        init(onHandle: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void = { _, _ in },
             onEndTurn: @escaping @Sendable (ScriptedHandler) -> Bool = { _ in false }) {
            self.onHandle = onHandle
            self.onEndTurn = onEndTurn
        }

        /// The calling thread's name, as the kernel has it.
        static func threadName() -> String {
            #if os(Linux)
            return ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
            #else
            var name = [CChar](repeating: 0, count: 64)
            pthread_getname_np(pthread_self(), &name, name.count)
            return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            #endif
        }

        func handle(_ request: HTTPRequest, responder: HTTPResponder) {
            threads.withLock { _ = $0.insert(Self.threadName()) }
            responders.withLock { $0.append(responder) }
            onHandle(request, responder)
        }

        func endTurn() -> Bool {
            threads.withLock { _ = $0.insert(Self.threadName()) }
            endTurns.withLock { $0 += 1 }
            let more = onEndTurn(self)
            turnEnded.signal()
            return more
        }
    }

    /// The loop running on a thread named "test-event-loop".
    final class RunningLoop: Sendable {
        let loop: EventLoop
        private let stopped = DispatchGroup()

        init(_ handler: ScriptedHandler) throws {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            // No turn for the time-out scan during a test: every turn is one the test caused.
            configuration.timeoutCheckInterval = 600
            let (listener, _) = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 16)
            loop = try EventLoop(configuration: configuration, handler: handler, listener: listener)
            let running = DispatchSemaphore(value: 0)
            let loop = self.loop
            stopped.startThread(named: "test-event-loop") { loop.run(started: { running.signal() }) }
            running.wait()
        }

        /// Hands a request to the loop; the answer (nil: withdrawn, or stopped first) goes to `answers`.
        @discardableResult
        func inject(_ target: String, into answers: Answers) -> Bool {
            loop.inject(InProcessRequest(request: HTTPRequest(method: "GET", target: target, remoteAddress: "127.0.0.1"),
                                         deliver: { answers.add(target, $0) }))
        }

        func stop() {
            loop.beginShutdown()
            stopped.wait()
        }
    }

    /// The answers delivered, by request target, each signalled as it comes.
    final class Answers: Sendable {
        private let delivered = Locked<[String: Int?]>([:])
        private let arrived = DispatchSemaphore(value: 0)

        func add(_ target: String, _ response: HTTPResponse?) {
            delivered.withLock { $0[target] = .some(response?.status) }
            arrived.signal()
        }

        /// The status delivered for `target` (nil inside: withdrawn), waiting for it for at most a minute.
        func status(of target: String) -> Int?? {
            let deadline = DispatchTime.now() + 60
            while true {
                if let found = delivered.withLock({ $0[target] }) { return found }
                guard DispatchTime.now() < deadline, arrived.wait(timeout: deadline) == .success else { return nil }
            }
        }

        var count: Int { delivered.withLock { $0.count } }
    }

    @Test func handleAndEndTurnRunOnTheLoopsThreadAndAnAnswerFromAnotherThreadReachesIt() throws {
        let handler = ScriptedHandler(onHandle: { _, responder in
            Thread.detachNewThread { responder.respond(HTTPResponse(status: 204)) }
        })
        let running = try RunningLoop(handler)
        defer { running.stop() }
        let answers = Answers()
        #expect(running.inject("/a", into: answers))
        #expect(answers.status(of: "/a") == .some(204))
        #expect(handler.threads.withLock { $0 } == ["test-event-loop"])
    }

    @Test func aTurnAskedForFromAnotherThreadRunsEndTurn() throws {
        let handler = ScriptedHandler()
        let running = try RunningLoop(handler)
        defer { running.stop() }
        let before = handler.endTurns.withLock { $0 }
        running.loop.requestTurn()
        #expect(handler.turnEnded.wait(timeout: .now() + 60) == .success)
        #expect(handler.endTurns.withLock { $0 } > before)
        #expect(handler.threads.withLock { $0 } == ["test-event-loop"])
    }

    @Test func answersGivenDuringEndTurnLeaveAfterItAndAWithdrawnOneNever() throws {
        let answers = Answers()
        // While endTurn runs, how many answers had already been delivered.
        let deliveredDuringEndTurn = Locked<[Int]>([])
        let handler = ScriptedHandler(onEndTurn: { handler in
            // Both, whichever turn the second came in: under load the two injections can land
            // in two turns, and the first must wait for the second rather than be dropped.
            let waiting = handler.responders.withLock { all -> [HTTPResponder] in
                guard all.count == 2 else { return [] }
                defer { all.removeAll() }
                return all
            }
            guard waiting.count == 2 else { return false }
            waiting[0].respond(HTTPResponse(status: 201))
            waiting[1].respond(HTTPResponse(status: 201))
            waiting[1].withdraw()
            deliveredDuringEndTurn.withLock { $0.append(answers.count) }
            return false
        })
        let running = try RunningLoop(handler)
        defer { running.stop() }
        let injected = running.loop.inject(InProcessRequest(request: HTTPRequest(method: "POST", target: "/kept"),
                                                             deliver: { answers.add("/kept", $0) }))
            && running.loop.inject(InProcessRequest(request: HTTPRequest(method: "POST", target: "/withdrawn"),
                                                    deliver: { answers.add("/withdrawn", $0) }))
        #expect(injected)
        #expect(answers.status(of: "/kept") == .some(201))
        #expect(answers.status(of: "/withdrawn") == .some(nil))
        // Whichever turn took both, nothing left during its endTurn.
        #expect(deliveredDuringEndTurn.withLock { $0 }.allSatisfy { $0 == 0 })
        #expect(!deliveredDuringEndTurn.withLock { $0 }.isEmpty)
    }

    @Test func workLeftAtATurnsEndBringsAnotherTurnWithoutAWake() throws {
        // endTurn says work is left five times: five more turns follow on their own.
        let handler = ScriptedHandler(onEndTurn: { handler in handler.endTurns.withLock { $0 } <= 5 })
        let running = try RunningLoop(handler)
        defer { running.stop() }
        running.loop.requestTurn()
        for _ in 0..<6 { #expect(handler.turnEnded.wait(timeout: .now() + 60) == .success) }
        #expect(handler.endTurns.withLock { $0 } >= 6)
    }

    @Test func aStopAnswersNilToWhatWasNeverAnsweredAndRefusesWhatComesAfter() throws {
        let handler = ScriptedHandler()  // answers nothing
        let running = try RunningLoop(handler)
        let answers = Answers()
        #expect(running.inject("/never", into: answers))
        #expect(handler.turnEnded.wait(timeout: .now() + 60) == .success)
        running.stop()
        #expect(answers.status(of: "/never") == .some(nil))
        // Refused at once, and its answer never delivered: the loop is gone.
        #expect(!running.inject("/late", into: answers))
        #expect(answers.count == 1)
    }
}
