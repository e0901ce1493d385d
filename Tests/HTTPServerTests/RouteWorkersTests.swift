import Dispatch
import Locking
import Testing
@testable import HTTPServer

/// A route with `workers` runs its handler on their threads: the loop answers everyone else
/// meanwhile, a full queue is refused through `refused`, and what the handler throws there is
/// answered as on the loop.
@Suite struct RouteWorkersTests {
    private struct Routed: HTTPHandler {
        let router: Router
        func handle(_ request: HTTPRequest, responder: HTTPResponder) { router.route(request, responder: responder) }
    }

    struct Refusal: Error { var status: Int }

    @Test func aSlowReadOnWorkersHoldsUpNothingAndAFullQueueIs503() throws {
        let workers = WorkerPool(named: "test-reads", threads: 1, priority: .normal, maxWaiting: 1)
        defer { workers.stop() }
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let router = Router([
            RouteGroup("reads", routes: [
                Route(.exact("/slow"), methods: ["GET"], workers: workers) { _ in
                    entered.signal()
                    gate.wait()
                    return .text(200, "slow")
                },
                Route(.exact("/throws"), methods: ["GET"], workers: workers) { _ in throw Refusal(status: 422) },
                Route(.exact("/quick"), methods: ["GET"]) { _ in .text(200, "quick") },
            ]),
        ], methodNotAllowed: { _, _ in .text(405, "") },
           refused: { _, error in
               if error is Route.WorkersBusy { return .text(503, "busy") }
               return .text((error as? Refusal)?.status ?? 500, "refused")
           },
           fallback: { _, responder in responder.respond(.text(404, "")) })
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.accessLog = nil
        let server = HTTPServer(configuration: configuration, handler: Routed(router: router))
        try server.start()
        defer {
            server.shutdown()
            server.waitUntilStopped()
        }
        @Sendable func ask(_ path: String) -> (Int, String) {
            let response = server.respond(to: HTTPRequest(method: "GET", target: path, headers: HTTPHeaders()))!
            guard case .bytes(let body) = response.body else { return (response.status, "") }
            return (response.status, String(decoding: body, as: UTF8.self))
        }
        // A read's handler holds its worker thread: the loop answers everyone else meanwhile.
        let slow = Locked<(Int, String)?>(nil)
        let done = DispatchGroup()
        done.enter()
        DispatchQueue.global().async {
            let answer = ask("/slow")
            slow.withLock { $0 = answer }
            done.leave()
        }
        entered.wait()
        #expect(ask("/quick") == (200, "quick"))
        // With the only thread busy and the queue's one place taken, the next read is refused
        // at once through `refused`, never queued without bound.
        let queuedRan = DispatchSemaphore(value: 0)
        #expect(workers.submit { queuedRan.signal() })
        #expect(ask("/slow") == (503, "busy"))
        #expect(ask("/quick") == (200, "quick"))
        gate.signal()
        done.wait()
        #expect(slow.withLock { $0 }! == (200, "slow"))
        // The queue's place is free once the job that took it has run.
        queuedRan.wait()
        #expect(ask("/throws") == (422, "refused"))
    }
}
