import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A response finished on some thread, on its way back to the loop that owns the request.
struct Completion: Sendable {
    var exchange: HTTPResponder.Exchange
    var response: HTTPResponse
}

/// A request handed to `HTTPServer.respond(to:)`, and whom to give its answer (nil: withdrawn,
/// or the server stopped first).
struct InProcessRequest: Sendable {
    var request: HTTPRequest
    var deliver: @Sendable (HTTPResponse?) -> Void
}

/// One thread that owns the listening socket and every connection: it accepts, reads, parses,
/// calls the handler and writes. Nothing but `complete`, `inject`, `requestTurn` and
/// `beginShutdown` is touched from other threads; those go through the locked inbox and the wake pipe.
final class EventLoop: @unchecked Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    private(set) var poller: Poller
    private let listener: Int32
    private var listening = true
    private var connections: [Int32: Connection] = [:]
    private var nextGeneration: UInt64 = 1
    /// Newcomers past `maxConnections` whose request was in flight when no other connection
    /// could make room for them; any more are refused unread.
    static let admittedPastTheCap = 64
    /// Counts the loop's turns: a connection takes up at most a few pipelined requests a turn.
    private(set) var turn: UInt64 = 0
    /// Requests off sockets a turn takes up, at most, across every connection: hundreds of
    /// connections each with pipelined requests waiting make several short turns, not one long
    /// one, so that a newcomer (a load balancer's probe, a report) is read within a short turn.
    static let dispatchesPerTurn = 256
    var dispatchBudget = EventLoop.dispatchesPerTurn
    /// Connections with whole requests left in their buffers when their share of a turn ran
    /// out: taken up again at the start of the next turn, which then does not wait for events.
    private var revisit: [Connection] = []
    /// Connections closed at the cap to make room for new ones (`evictStalest`).
    private(set) var evicted = 0

    let responses: ResponseCounts
    private let inbox = Locked<Inbox>(Inbox())
    private struct Inbox {
        var completions: [Completion] = []
        /// Connections whose streamed body has more after a `.pending`, by descriptor and generation.
        var streamsReady: [(fd: Int32, generation: UInt64)] = []
        var injected: [InProcessRequest] = []
        var shutdownRequested = false
        var pipeClosed = false
    }
    /// Requests from `HTTPServer.respond(to:)` not answered yet, by exchange number.
    private var inProcess: [UInt64: @Sendable (HTTPResponse?) -> Void] = [:]
    private var nextInProcess: UInt64 = 0
    /// Their answers given while `endTurn` ran, and which of those were withdrawn.
    private var heldInProcess: [(exchange: UInt64, response: HTTPResponse)] = []
    private var withdrawnInProcess: Set<UInt64> = []
    /// What the handler's last `endTurn` said: work is left for the next turn.
    private var workLeft = false
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Written once by the loop's thread before `started` lets `HTTPServer.start` return and
    /// publish the loop: every other thread that reads it got the loop after that, so none can
    /// read it while the loop is still starting.
    private var loopThread: pthread_t?

    /// The most times one turn looks for ready sockets before `endTurn`, so that a steady
    /// stream of requests cannot keep the first ones of a turn waiting for its end.
    static let looksPerTurn = 4

    private(set) var date = HTTPDate()
    /// Every connection reads into this one buffer, then keeps only the bytes it got.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var logBuffer: [UInt8] = []
    private var logLines = 0
    private var lastHeadStart: ResponseHeadStart?
    private var lastLoggedMethodAndPath: LoggedMethodAndPath?
    /// True while the handler's `endTurn` runs: answers given then are prepared but not sent
    /// until it returns, and may still be withdrawn.
    private(set) var holdingSends = false
    /// Connections with answers prepared while `holdingSends`, in the order they got them.
    private var held: [Connection] = []
    private var draining = false
    private var drainDeadline = Double.infinity
    private var lastTimeoutScan = 0.0

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler, listener: Int32, responses: ResponseCounts = ResponseCounts()) throws {
        self.responses = responses
        self.configuration = configuration
        self.handler = handler
        self.listener = listener
        self.poller = try Poller()
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError(call: "pipe", errno: errno) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        try Socket.setNonBlocking(wakeRead)
        try Socket.setNonBlocking(wakeWrite)
        poller.add(listener, readable: true, writable: false)
        poller.add(wakeRead, readable: true, writable: false)
    }

    var isDraining: Bool { draining }

    // MARK: - Cross-thread entry points

    func complete(_ completion: Completion) {
        if let loopThread, pthread_equal(loopThread, pthread_self()) != 0 {
            deliver(completion)
            return
        }
        let wasEmpty = inbox.withLock { state in
            state.completions.append(completion)
            return state.completions.count == 1 && state.injected.isEmpty
        }
        if wasEmpty { wake() }
    }

    /// A connection's streamed body has more: the loop sends it on its next turn.
    func streamReady(fd: Int32, generation: UInt64) {
        let wasEmpty = inbox.withLock { state in
            state.streamsReady.append((fd, generation))
            return state.streamsReady.count == 1 && state.completions.isEmpty && state.injected.isEmpty
        }
        if wasEmpty { wake() }
    }

    /// Hands `request` to the handler as if it had come off a socket; false once the loop has stopped.
    func inject(_ request: InProcessRequest) -> Bool {
        let taken = inbox.withLock { state -> Bool in
            guard !state.pipeClosed else { return false }
            state.injected.append(request)
            return true
        }
        if taken { wake() }
        return taken
    }

    /// Makes the loop turn once more, so that its handler's `endTurn` runs: for work finished
    /// on another thread that the handler takes up at the end of a turn.
    func requestTurn() {
        if let loopThread, pthread_equal(loopThread, pthread_self()) != 0 { return }
        wake()
    }

    func beginShutdown() {
        inbox.withLock { $0.shutdownRequested = true }
        wake()
    }

    private func wake() {
        // Under the inbox's lock, so that a thread finishing late never writes to the pipe after
        // the loop has closed it: the descriptor number may by then belong to a file.
        inbox.withLock { state in
            guard !state.pipeClosed else { return }
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    // MARK: - The loop

    /// Runs until shutdown has drained every connection (or the grace period ran out).
    func run(started: () -> Void) {
        loopThread = pthread_self()
        started()
        date.update()
        while true {
            let timeout = workLeft || !revisit.isEmpty ? 0 : draining ? 50 : Int32(configuration.timeoutCheckInterval * 1000)
            var events = poller.wait(timeoutMilliseconds: timeout)
            date.update()
            turn &+= 1
            dispatchBudget = Self.dispatchesPerTurn
            if !revisit.isEmpty {
                let again = revisit
                revisit.removeAll(keepingCapacity: true)
                // Half the turn's budget at most: the other half is for what the sockets bring now
                // (a newcomer is never behind hundreds of connections' leftovers).
                var next = 0
                while next < again.count, dispatchBudget > Self.dispatchesPerTurn / 2 {
                    again[next].resumeInput()
                    next += 1
                }
                // Those the budget did not reach go first next turn, ahead of those that had their share.
                if next < again.count { revisit.insert(contentsOf: again[next...], at: 0) }
            }
            // A turn takes everything that is ready, looking again without waiting until nothing
            // more is, before `endTurn`: the requests that arrived while the first ones were
            // read then share their flush, instead of starting a small turn of their own that
            // makes them, and the requests behind them, wait for one more flush.
            var looks = 1
            while true {
                for event in events {
                    if event.fd == listener {
                        acceptConnections()
                    } else if event.fd == wakeRead {
                        drainInbox()
                    } else if let connection = connections[event.fd] {
                        connection.handle(event)
                    }
                }
                guard looks < Self.looksPerTurn else { break }
                events = poller.wait(timeoutMilliseconds: 0)
                if events.isEmpty { break }
                looks += 1
            }
            holdingSends = true
            workLeft = handler.endTurn()
            releaseHeldSends()
            let now = monotonicSeconds()
            if now - lastTimeoutScan >= configuration.timeoutCheckInterval {
                lastTimeoutScan = now
                for connection in Array(connections.values) where now >= connection.deadline {
                    connection.timedOut()
                }
            }
            flushLog()
            if draining && (connections.isEmpty || now >= drainDeadline) { break }
        }
        for connection in Array(connections.values) { connection.close() }
        flushLog()
        poller.remove(wakeRead)
        let unanswered = inbox.withLock { state -> [InProcessRequest] in
            state.pipeClosed = true
            close(wakeRead)
            close(wakeWrite)
            return state.injected
        }
        for request in unanswered { request.deliver(nil) }
        for deliver in inProcess.values { deliver(nil) }
        inProcess.removeAll()
        poller.close()
    }

    /// Sends what was held while `endTurn` ran, or closes the connections whose answers were
    /// withdrawn meanwhile.
    private func releaseHeldSends() {
        holdingSends = false
        if !heldInProcess.isEmpty {
            let answers = heldInProcess
            heldInProcess.removeAll(keepingCapacity: true)
            for (exchange, response) in answers {
                guard let deliver = inProcess.removeValue(forKey: exchange) else { continue }
                deliver(withdrawnInProcess.remove(exchange) == nil ? response : nil)
            }
        }
        guard !held.isEmpty else { return }
        var releasing: [Connection] = []
        swap(&releasing, &held)
        for connection in releasing { connection.releaseHeld() }
        releasing.removeAll(keepingCapacity: true)
        swap(&releasing, &held)
    }

    private func acceptConnections() {
        for _ in 0..<256 {
            guard listening, let (fd, address) = Socket.accept(listener) else { return }
            // Past the cap by more than a few newcomers with requests in flight: refused unread.
            if connections.count >= configuration.maxConnections + Self.admittedPastTheCap {
                Connection.refuse(fd)
                responses.count(503)
                continue
            }
            let connection = Connection(fd: fd, generation: nextGeneration, remoteAddress: address, loop: self)
            nextGeneration += 1
            connections[fd] = connection
            poller.add(fd, readable: true, writable: false)
            guard connections.count > configuration.maxConnections else { continue }
            // At the cap, the newcomer is read first: a whole request waiting in its socket (a
            // load balancer's probe, a report) is taken up, and room is made by closing another.
            connection.readAvailable()
            if evictStalest(sparing: connection) { continue }
            if connections[fd] === connection && connection.waitsOnClient { connection.refuse() }
        }
    }

    /// At the connection cap, makes room for a new connection by closing one that waits on its
    /// client, among a sample: the one dribbling a request's head longest first, then the one idle
    /// longest, and a connection not read yet last (`Connection.evictionRank`). So thousands of
    /// sockets holding partial headers cannot keep everyone else (`/healthz` included) out until
    /// their time-outs. A connection whose request is being answered is never closed. The sample
    /// bounds the cost of an accept at the cap, as sampled LRU does.
    private func evictStalest(sparing newcomer: Connection) -> Bool {
        var stalest: Connection?
        var looked = 0
        for connection in connections.values {
            if connection !== newcomer, connection.waitsOnClient, stalest.map({ (connection.evictionRank, connection.lastProgress) < ($0.evictionRank, $0.lastProgress) }) ?? true {
                stalest = connection
            }
            looked += 1
            if looked == 256 { break }
        }
        guard let stalest else { return false }
        evicted += 1
        stalest.timedOut()
        return true
    }

    private func drainInbox() {
        var scratch = [UInt8](repeating: 0, count: 256)
        while read(wakeRead, &scratch, scratch.count) > 0 {}
        let (completions, injected, streamsReady, shutdownRequested) = inbox.withLock { state in
            let taken = (state.completions, state.injected, state.streamsReady, state.shutdownRequested)
            state.completions.removeAll(keepingCapacity: true)
            state.injected.removeAll()
            state.streamsReady.removeAll(keepingCapacity: true)
            return taken
        }
        for completion in completions { deliver(completion) }
        for (fd, generation) in streamsReady {
            guard let connection = connections[fd], connection.generation == generation else { continue }
            connection.streamReady()
        }
        for request in injected {
            let exchange = nextInProcess
            nextInProcess += 1
            inProcess[exchange] = request.deliver
            handler.handle(request.request, responder: HTTPResponder(loop: self, exchange: .inProcess(exchange)))
        }
        if shutdownRequested && !draining { startDraining() }
    }

    private func deliver(_ completion: Completion) {
        switch completion.exchange {
        case .connection(let fd, let generation, let sequence):
            guard let connection = connections[fd], connection.generation == generation else {
                return  // the client went away; the work it asked for is done all the same
            }
            connection.deliver(sequence: sequence, response: completion.response)
        case .inProcess(let exchange):
            if holdingSends {
                guard inProcess[exchange] != nil, !heldInProcess.contains(where: { $0.exchange == exchange }) else { return }
                heldInProcess.append((exchange, completion.response))
            } else {
                inProcess.removeValue(forKey: exchange)?(completion.response)
            }
        }
    }

    private func startDraining() {
        draining = true
        drainDeadline = monotonicSeconds() + configuration.shutdownGracePeriod
        listening = false
        poller.remove(listener)
        close(listener)
        for connection in Array(connections.values) { connection.closeIfIdle() }
    }

    // MARK: - Used by connections

    func makeResponder(for connection: Connection, sequence: UInt64) -> HTTPResponder {
        HTTPResponder(loop: self, exchange: .connection(fd: connection.fd, generation: connection.generation, sequence: sequence))
    }

    /// `connection` has whole requests left that its share of this turn did not take up.
    func revisitNextTurn(_ connection: Connection) {
        revisit.append(connection)
    }

    /// `connection` has answers to send once `endTurn` returns.
    func hold(_ connection: Connection) {
        held.append(connection)
    }

    /// The answer to `exchange` must not leave: see `HTTPResponder.withdraw`.
    func withdraw(_ exchange: HTTPResponder.Exchange) {
        guard let loopThread, pthread_equal(loopThread, pthread_self()) != 0, holdingSends else { return }
        switch exchange {
        case .connection(let fd, let generation, let sequence):
            guard let connection = connections[fd], connection.generation == generation else { return }
            connection.withdraw(sequence: sequence)
        case .inProcess(let exchange):
            if heldInProcess.contains(where: { $0.exchange == exchange }) { withdrawnInProcess.insert(exchange) }
        }
    }

    func forget(_ connection: Connection) {
        if connections[connection.fd] === connection { connections[connection.fd] = nil }
        poller.remove(connection.fd)
    }

    func setInterest(_ fd: Int32, readable: Bool, writable: Bool) {
        poller.modify(fd, readable: readable, writable: writable)
    }

    /// The head start for `status` and `headers`, reused from the last response when it fits.
    func responseHeadStart(status: Int, headers: HTTPHeaders) -> ResponseHeadStart {
        if let last = lastHeadStart, last.fits(status: status, headers: headers, date: date) { return last }
        let head = ResponseHeadStart(status: status, headers: headers, date: date)
        lastHeadStart = head
        return head
    }

    var logsAccess: Bool { configuration.accessLog != nil }

    /// `"method":"POST","path":"/…"` for the access log, reused while requests repeat them: an
    /// endpoint's traffic is mostly one path, and escaping it afresh cost more than comparing it.
    func loggedMethodAndPath(method: String, target: String) -> LoggedMethodAndPath {
        if let last = lastLoggedMethodAndPath, last.method == method, last.target == target { return last }
        let logged = LoggedMethodAndPath(method: method, target: target)
        lastLoggedMethodAndPath = logged
        return logged
    }

    /// Adds `count` whole lines, each ending in a newline, to the turn's lines.
    func appendLogLines(_ lines: [UInt8], count: Int) {
        guard configuration.accessLog != nil else { return }
        logBuffer.append(contentsOf: lines)
        logLines += count
    }

    /// The turn's lines in one hand-off; the writer's own thread waits for the reader, never this one.
    private func flushLog() {
        guard let accessLog = configuration.accessLog, !logBuffer.isEmpty else { return }
        accessLog.enqueue(logBuffer, lines: logLines)
        logBuffer.removeAll(keepingCapacity: true)
        logLines = 0
    }
}
