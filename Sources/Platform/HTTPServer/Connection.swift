#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One client connection, owned by its event loop's thread.
///
/// Requests are parsed as bytes arrive and handed to the handler at once, so pipelined requests
/// are worked on together; their responses wait in `slots` and leave strictly in request order.
/// Where it stands is its `ConnectionState`, which also takes every decision about reading,
/// closing and time-outs; this class moves the bytes and does what the state decides.
final class Connection {
    let fd: Int32
    let generation: UInt64
    let remoteAddress: String
    /// Unchecked: the loop owns its connections and keeps none past its own life, and a checked
    /// reference cost an atomic retain and release on every one of the many uses per request.
    private unowned(unsafe) let loop: EventLoop

    private var parser: HTTPRequestParser
    private var inbound: [UInt8] = []
    private var inboundStart = 0
    private var state = ConnectionState()
    /// Set while input is parsed: an answer delivered meanwhile is written by the flush that follows.
    private var processing = false

    private struct Slot {
        var sequence: UInt64
        var method: String
        /// The request-target as received (the access log shows its path).
        var target: String
        var keepAlive: Bool
        var version: HTTPVersion
        var startedAt: Double
        var bytesIn: Int
        var response: HTTPResponse?
    }
    private var slots: [Slot] = []
    /// Body bytes of answers waiting in `slots` for the ones before them: with `outbound`, what
    /// this connection holds for a client that may never read. Past `maxHeldBytes` no further
    /// pipelined request is taken up until the client reads.
    private var answeredBytes = 0
    static let maxHeldBytes = 256 * 1024
    /// Pipelined requests taken up in one turn of the loop, at most: a client that pipelines
    /// hundreds cannot make one turn, and every other client's answer, wait for all of them.
    static let maxDispatchedPerTurn = 16
    private var dispatchTurn: UInt64 = 0
    private var dispatchedInTurn = 0
    /// A read (GET or HEAD) pipelined behind a write not answered yet: it waits for the writes
    /// before it, so that it sees what they wrote (a report POSTed, then `/api/reports` on the
    /// same connection). Writes are dispatched at once, so a pipelined batch of them still shares
    /// one flush, and reads behind reads are worked on together.
    private var heldRead: HTTPRequest?
    private var nextSequence: UInt64 = 0

    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// Access-log lines not yet given to the loop: those of held answers wait here until they leave.
    private var logLines: [UInt8] = []
    private var logLineCount = 0
    private var stream: (body: any HTTPBodyStream, chunked: Bool)?
    private var interest = (readable: true, writable: false)

    private var requestStartedAt: Double?
    private(set) var lastProgress: Double
    /// Some bytes have arrived: a connection not yet read may hold a whole request.
    private(set) var everRead = false
    private(set) var deadline: Double

    init(fd: Int32, generation: UInt64, remoteAddress: String, loop: EventLoop) {
        self.fd = fd
        self.generation = generation
        self.remoteAddress = remoteAddress
        self.loop = loop
        self.parser = HTTPRequestParser(limits: loop.configuration.limits, remoteAddress: remoteAddress)
        let now = monotonicSeconds()
        lastProgress = now
        deadline = now + loop.configuration.idleTimeout
    }

    /// Past the connection cap with nothing in flight: the same 503, then close.
    func refuse() {
        Self.refuse(fd, closing: false)
        loop.responses.count(503)
        close()
    }

    /// Past the connection cap: a best-effort 503, then close.
    static func refuse(_ fd: Int32, closing: Bool = true) {
        let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
        _ = text.utf8CString.withUnsafeBufferPointer { Socket.send(fd, $0.baseAddress!, $0.count - 1) }
        if closing { systemClose(fd) }
    }

    // MARK: - Events

    func handle(_ event: PollEvent) {
        // Hang-up or error: the peer can no longer read an answer. (A half-close arrives as
        // readable and end-of-file instead, and is still answered.)
        if event.failed {
            readAvailable()  // a request that arrived before the hang-up is still handled
            close()
            return
        }
        if event.readable { readAvailable() }
        if event.writable && !state.isClosed { flush() }
    }

    func readAvailable() {
        guard state.reads else { return }
        let n = loop.readBuffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n > 0 {
            everRead = true
            inbound.append(contentsOf: loop.readBuffer[0..<n])
            lastProgress = monotonicSeconds()
        } else if n == 0 {
            state.peerFinished()
        } else {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            close()
            return
        }
        processInput()
        flush()
    }

    /// Parses and dispatches every complete request in the buffer, up to the pipelining limit.
    private func processInput() {
        processing = true
        defer { processing = false }
        if dispatchTurn != loop.turn {
            dispatchTurn = loop.turn
            dispatchedInTurn = 0
        }
        if let read = heldRead {
            guard !awaitsWrite else { return }
            heldRead = nil
            dispatch(read)
        }
        while heldRead == nil && state.takesMore(work, maxPipelined: loop.configuration.maxPipelinedRequests, maxHeldBytes: Self.maxHeldBytes) {
            // The turn's budget bounds pipelining: a connection with nothing in flight (a probe, a
            // report, any client that waits for its answer) is always taken up.
            guard dispatchedInTurn < Self.maxDispatchedPerTurn, loop.dispatchBudget > 0 || slots.isEmpty else {
                if !state.revisitQueued && inboundStart < inbound.count {
                    state.revisitQueued = true
                    loop.revisitNextTurn(self)
                }
                break
            }
            let event: HTTPRequestParser.Event
            do {
                event = try parser.next(inbound, start: &inboundStart)
            } catch {
                fail(error)
                break
            }
            switch consume event {
            case .needMore:
                if parser.isMidRequest && requestStartedAt == nil { requestStartedAt = monotonicSeconds() }
                compactInbound()
                return
            case .expectContinue:
                requestStartedAt = requestStartedAt ?? monotonicSeconds()
                state.continueOwed = true
            case .request(let request):
                requestStartedAt = nil
                if (request.method == "GET" || request.method == "HEAD") && awaitsWrite {
                    heldRead = request
                } else {
                    dispatch(request)
                }
            }
        }
        compactInbound()
    }

    /// What the connection holds, for its state's decisions.
    private var work: ConnectionState.Work {
        ConnectionState.Work(slots: slots.count, heldRead: heldRead != nil, streaming: stream != nil, outboundPending: outboundPending,
                             answeredBytes: answeredBytes, midRequest: parser.isMidRequest, unparsedInput: inboundStart < inbound.count,
                             draining: loop.isDraining)
    }

    /// Whether it may be closed to make room for another (`ConnectionState.waitsOnClient`).
    var waitsOnClient: Bool { state.waitsOnClient(work) }

    /// Which waiting connection goes first when room is needed (`ConnectionState.evictionRank`).
    var evictionRank: Int { ConnectionState.evictionRank(midRequest: parser.isMidRequest, everRead: everRead) }

    /// A request that may write (any method but GET and HEAD) is not answered yet.
    private var awaitsWrite: Bool {
        slots.contains { $0.response == nil && $0.method != "GET" && $0.method != "HEAD" }
    }

    private func dispatch(_ request: HTTPRequest) {
        dispatchedInTurn += 1
        loop.dispatchBudget -= 1
        let sequence = nextSequence
        nextSequence += 1
        let keepAlive = request.keepAlive
        slots.append(Slot(sequence: sequence, method: request.method, target: request.target, keepAlive: keepAlive,
                          version: request.version, startedAt: monotonicSeconds(), bytesIn: request.body.count))
        state.continueOwed = false
        if !keepAlive { state.stopTakingRequests() }
        loop.handler.handle(request, responder: loop.makeResponder(for: self, sequence: sequence))
    }

    /// A framing error: answer it after whatever is already queued, then close.
    private func fail(_ error: HTTPParseError) {
        state.stopTakingRequests()
        state.continueOwed = false
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        let slot = Slot(sequence: nextSequence, method: "-", target: "-", keepAlive: false, version: .http1_1,
                        startedAt: monotonicSeconds(), bytesIn: 0,
                        response: HTTPResponse(status: error.status, headers: headers, body: Array((error.message + "\n").utf8)))
        nextSequence += 1
        if case .bytes(let body)? = slot.response?.body { answeredBytes += body.count }
        slots.append(slot)
    }

    private func compactInbound() {
        if inboundStart == inbound.count {
            inbound.removeAll(keepingCapacity: inbound.capacity <= 256 * 1024)
            inboundStart = 0
        } else if inboundStart > 16 * 1024 {
            inbound.removeFirst(inboundStart)
            inboundStart = 0
        }
    }

    func deliver(sequence: UInt64, response: HTTPResponse) {
        guard let index = slots.firstIndex(where: { $0.sequence == sequence }), slots[index].response == nil else { return }
        slots[index].response = response
        if case .bytes(let body) = response.body { answeredBytes += body.count }
        if !processing { flush() }
    }

    // MARK: - Writing

    private var outboundPending: Int { outbound.count - outboundStart }

    /// Moves finished responses, in order, into the outbound buffer and writes what the socket takes.
    private func flush() {
        guard !state.isClosed else { return }
        var pulled = 0
        while true {
            if let current = stream {
                guard outboundPending < 256 * 1024, pulled < 1024 * 1024, !state.streamPending else { break }
                switch current.body.next(maxBytes: 64 * 1024) {
                case .bytes(let piece):
                    if piece.isEmpty { continue }
                    pulled += piece.count
                    if current.chunked {
                        outbound.append(utf8: String(piece.count, radix: 16))
                        outbound.append(ascii: "\r\n")
                    }
                    outbound.append(contentsOf: piece)
                    if current.chunked { outbound.append(contentsOf: [0x0D, 0x0A]) }
                case .pending:
                    state.streamPending = true
                case .end:
                    if current.chunked { outbound.append(ascii: "0\r\n\r\n") }
                    stream = nil
                }
                continue
            }
            guard let first = slots.first, let response = first.response else { break }
            slots.removeFirst()
            if case .bytes(let body) = response.body { answeredBytes -= body.count }
            serialize(response, for: first)
        }
        if state.continueOwed, slots.isEmpty, stream == nil {
            outbound.append(contentsOf: Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            state.continueOwed = false
        }
        if loop.holdingSends {
            if state.hold() { loop.hold(self) }
            return  // the rest of this flush runs when the loop releases the answers
        }
        writeOutbound()
        guard !state.isClosed else { return }
        switch state.afterWrite(work, maxPipelined: loop.configuration.maxPipelinedRequests, maxHeldBytes: Self.maxHeldBytes) {
        case .close:
            close()
            return
        case .takeUpInput:
            processInput()
            // Only when something can be sent: a stream being sent holds the slots behind it
            // (waiting for its producer, or for the socket's next writable event).
            if stream == nil, slots.first?.response != nil { flush(); return }
        case .wait:
            break
        }
        updateInterest()
        updateDeadline()
    }

    /// The stream being sent has more (or has ended) after a `.pending`.
    func streamReady() {
        guard state.streamPending else { return }
        state.streamPending = false
        lastProgress = monotonicSeconds()
        guard !state.isClosed, !state.isHeld else { return }
        flush()
    }

    /// A new turn: take up the requests this connection's share of the last one left.
    func resumeInput() {
        state.revisitQueued = false
        guard !state.isClosed, !state.isHeld else { return }
        processInput()
        flush()
    }

    /// The loop's `endTurn` is over: send the held answers, or close if one was withdrawn.
    func releaseHeld() {
        let send = state.released()
        guard !state.isClosed else { return }
        if !send {
            // Their lines are kept, marked, so the log still shows every request that came in.
            var marked: [UInt8] = []
            var start = 0
            for end in logLines.indices where logLines[end] == 0x0A {
                marked.append(contentsOf: logLines[start..<(end - 1)])  // without its closing brace
                marked.append(ascii: #","withdrawn":true}"#)
                marked.append(0x0A)
                start = end + 1
            }
            logLines = marked
            passLogLines()
            close()
            return
        }
        passLogLines()
        flush()
    }

    /// Marks the held answer to `sequence`, if there is one, as withdrawn.
    func withdraw(sequence: UInt64) {
        // Still in `slots`: not answered yet, so there is nothing held to withdraw.
        guard !slots.contains(where: { $0.sequence == sequence }) else { return }
        state.withdraw()
    }

    private func serialize(_ response: HTTPResponse, for slot: Slot) {
        let head = loop.responseHeadStart(status: response.status, headers: response.headers)
        let closing = !slot.keepAlive || loop.isDraining || head.asksToClose
            || (slot.version == .http1_0 && { if case .stream = response.body { return true }; return false }())
        // Bytes are appended straight to the outbound buffer: this runs for every response.
        outbound.append(contentsOf: head.bytes)
        var bodyBytes = 0
        switch response.body {
        case .bytes(let bytes):
            bodyBytes = bytes.count
            if response.status != 204 && response.status != 304 {
                outbound.append(ascii: "Content-Length: ")
                outbound.append(decimal: bytes.count)
                outbound.append(ascii: "\r\n")
            }
        case .stream:
            if slot.version == .http1_1 { outbound.append(ascii: "Transfer-Encoding: chunked\r\n") }
        }
        if closing {
            outbound.append(ascii: "Connection: close\r\n")
            state.closeAfterFlush()
        } else if slot.version == .http1_0 {
            outbound.append(ascii: "Connection: keep-alive\r\n")
        }
        outbound.append(ascii: "\r\n")
        if slot.method != "HEAD" {
            switch response.body {
            case .bytes(let bytes): outbound.append(contentsOf: bytes)
            case .stream(let body):
                stream = (body, slot.version == .http1_1)
                state.streamPending = false
                body.whenReady { [loop, fd, generation] in loop.streamReady(fd: fd, generation: generation) }
            }
        } else if case .stream(let body) = response.body {
            body.cancel()  // a HEAD: nothing of it is sent
        }
        loop.responses.count(response.status)
        if loop.logsAccess { accessLog(slot, status: response.status, bytesOut: bodyBytes, note: response.logNote) }
    }

    private func accessLog(_ slot: Slot, status: Int, bytesOut: Int, note: String?) {
        let micros = Int((monotonicSeconds() - slot.startedAt) * 1_000_000)
        let date = loop.date
        let methodAndPath = loop.loggedMethodAndPath(method: slot.method, target: slot.target)
        // Every request writes one of these lines, so they are built from byte buffers, not Strings,
        // in a local (one exclusive access to the property instead of one per piece).
        var line: [UInt8] = []
        swap(&line, &logLines)
        line.append(ascii: "{\"time\":\"")
        date.appendRFC3339Now(to: &line)
        line.append(ascii: "\",")
        line.append(contentsOf: methodAndPath.json)
        line.append(ascii: ",\"status\":")
        line.append(decimal: status)
        line.append(ascii: ",\"bytes_in\":")
        line.append(decimal: slot.bytesIn)
        line.append(ascii: ",\"bytes_out\":")
        line.append(decimal: bytesOut)
        line.append(ascii: ",\"duration_us\":")
        line.append(decimal: micros)
        if let note {
            line.append(ascii: ",\"note\":")
            appendJSONString(note, to: &line)
        }
        line.append(ascii: "}\n")
        swap(&line, &logLines)
        logLineCount += 1
        if !state.isHeld && !loop.holdingSends { passLogLines() }
    }

    private func passLogLines() {
        guard logLineCount > 0 else { return }
        loop.appendLogLines(logLines, count: logLineCount)
        logLines.removeAll(keepingCapacity: true)
        logLineCount = 0
    }

    private func writeOutbound() {
        while outboundPending > 0 {
            let n = outbound.withUnsafeBytes { buffer in
                Socket.send(fd, buffer.baseAddress! + outboundStart, outboundPending)
            }
            if n > 0 {
                outboundStart += n
                lastProgress = monotonicSeconds()
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                close()
                return
            }
        }
        if outboundPending == 0 {
            outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
            outboundStart = 0
        }
    }

    private func updateInterest() {
        // Stop reading while a client's unread responses pile up or its pipeline is full.
        let work = self.work
        let wantRead = state.wantsRead(work, maxPipelined: loop.configuration.maxPipelinedRequests, maxHeldBytes: Self.maxHeldBytes)
        let wantWrite = state.wantsWrite(work)
        if wantRead != interest.readable || wantWrite != interest.writable {
            interest = (wantRead, wantWrite)
            loop.setInterest(fd, readable: wantRead, writable: wantWrite)
        }
    }

    private func updateDeadline() {
        switch state.deadline(work) {
        case .none:
            deadline = .infinity
        case .write:
            deadline = lastProgress + loop.configuration.writeTimeout
        case .request:
            let started = requestStartedAt ?? monotonicSeconds()
            requestStartedAt = started
            deadline = started + loop.configuration.requestTimeout
        case .idle:
            deadline = lastProgress + loop.configuration.idleTimeout
        }
    }

    /// The deadline passed: a slow request gets a 408, an idle connection is simply closed.
    func timedOut() {
        if state.answersTimeOut(work) {
            let text = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = text.utf8CString.withUnsafeBufferPointer { Socket.send(fd, $0.baseAddress!, $0.count - 1) }
            loop.responses.count(408)
        }
        close()
    }

    /// On shutdown: close at once if nothing is in flight; otherwise close after the last answer.
    func closeIfIdle() {
        state.drain(midRequest: parser.isMidRequest)
        if state.closesWhenDraining(work) {
            close()
        } else {
            updateInterest()
        }
    }

    func close() {
        guard state.close() else { return }
        // Streams not sent, or not to the end, stop being made (and free what they read).
        stream?.body.cancel()
        stream = nil
        for slot in slots { if case .stream(let body)? = slot.response?.body { body.cancel() } }
        loop.forget(self)
        systemClose(fd)
    }
}

private func systemClose(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

/// Appends `s` as a JSON string literal; the log's only escaping need.
func appendJSONString(_ s: String, to out: inout [UInt8]) {
    var s = s
    s.withUTF8 { appendJSONString($0, to: &out) }
}

/// Appends UTF-8 `bytes` as a JSON string literal. Nearly every string logged needs no escape, so
/// such a run is copied whole.
func appendJSONString(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var start = 0
    for (i, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
        start = i + 1
        switch byte {
        case UInt8(ascii: "\""): out.append(ascii: "\\\"")
        case UInt8(ascii: "\\"): out.append(ascii: "\\\\")
        default:
            out.append(ascii: "\\u00")
            out.append(hexDigit(byte >> 4))
            out.append(hexDigit(byte & 0xF))
        }
    }
    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    out.append(UInt8(ascii: "\""))
}

private func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }

