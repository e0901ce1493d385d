/// Where one connection stands, apart from its bytes, and every decision taken from it: whether
/// to read, parse on, close, answer a time-out, or give way to a newcomer at the cap. A value: the
/// loop's `Connection` holds one, tells it what happened, and does what it decides; a test walks
/// it without a socket.
///
/// Four facts that change independently, each a small machine of its own, and three flags of the
/// protocol's own:
/// - `requests`: whether requests are still taken from what arrives;
/// - `peer`: whether the client may still send (a half-close ends its side; it may still read);
/// - `release`: whether answers leave at once or wait for the loop's turn to commit them;
/// - `phase`: open, closing once everything queued has left, closed.
struct ConnectionState: Equatable {
    enum Requests: Equatable {
        case taken
        /// After a framing error, a `Connection: close`, an answer that closes, or on shutdown.
        case stopped
    }

    enum Peer: Equatable {
        case sending
        /// Read returned end-of-file: requests already in the buffer are still answered.
        case finished
    }

    enum Release: Equatable {
        case immediate
        /// Answers wait in the outbound buffer for the end of the loop's turn (`EventLoop.holdingSends`).
        case held
        /// One of the held answers was withdrawn: the connection closes instead of sending them.
        case withdrawn
    }

    enum Phase: Equatable {
        case open
        /// An answer said `Connection: close`: close once everything queued has left.
        case closingAfterFlush
        case closed
    }

    private(set) var requests = Requests.taken
    private(set) var peer = Peer.sending
    private(set) var release = Release.immediate
    private(set) var phase = Phase.open
    /// The request being read asked for `100 Continue` and has not been sent one yet.
    var continueOwed = false
    /// Requests were left in the buffer for the loop's next turn (`EventLoop.revisitNextTurn`).
    var revisitQueued = false
    /// The body stream being sent answered `.pending`: nothing to write until it calls back.
    var streamPending = false

    /// What the connection holds at the moment of a decision.
    struct Work: Equatable {
        var slots = 0
        /// A read waits behind a write (`Connection.heldRead`).
        var heldRead = false
        var streaming = false
        var outboundPending = 0
        /// Body bytes of answers waiting in slots.
        var answeredBytes = 0
        /// The parser is part-way through a request.
        var midRequest = false
        /// Bytes not parsed yet are in the buffer.
        var unparsedInput = false
        var draining = false
    }

    /// What to do once queued answers have been written.
    enum AfterWrite: Equatable {
        case close
        /// Parse what waits in the buffer (or dispatch the held read), then write again.
        case takeUpInput
        /// Wait for the socket or the client: set the poller's interest and the deadline.
        case wait
    }

    /// What a connection's deadline guards.
    enum Deadline: Equatable {
        /// Nothing of the client's: the handler or a body's producer always answers.
        case none
        /// The client must read what is queued within the write time-out.
        case write
        /// The request must arrive whole within the request time-out of its first byte.
        case request
        /// Nothing in flight: closed after the idle time-out.
        case idle
    }

    // MARK: - Transitions

    mutating func stopTakingRequests() {
        requests = .stopped
    }

    mutating func peerFinished() {
        peer = .finished
    }

    /// An answer that closes the connection was queued.
    mutating func closeAfterFlush() {
        requests = .stopped
        if phase == .open { phase = .closingAfterFlush }
    }

    /// Answers are held for the turn's end. Returns whether the loop must be told (the first hold).
    mutating func hold() -> Bool {
        guard release == .immediate else { return false }
        release = .held
        return true
    }

    /// A held answer was withdrawn: only while answers are held.
    mutating func withdraw() {
        if release == .held { release = .withdrawn }
    }

    /// The turn's end: returns whether the held answers go (`false`: one was withdrawn, close).
    mutating func released() -> Bool {
        defer { release = .immediate }
        return release != .withdrawn
    }

    /// Returns whether it was open until now: closing happens once.
    mutating func close() -> Bool {
        guard phase != .closed else { return false }
        phase = .closed
        return true
    }

    /// On shutdown: no new request is taken, but one being read is still answered.
    mutating func drain(midRequest: Bool) {
        if !midRequest { requests = .stopped }
    }

    // MARK: - Decisions

    var isClosed: Bool { phase == .closed }
    var isHeld: Bool { release != .immediate }

    /// Whether a read of the socket may take requests from it.
    var reads: Bool { requests == .taken && peer == .sending }

    /// Whether more requests may be parsed now: the pipeline and what waits for the client are bounded.
    func takesMore(_ work: Work, maxPipelined: Int, maxHeldBytes: Int) -> Bool {
        requests == .taken && work.slots < maxPipelined && work.answeredBytes + work.outboundPending < maxHeldBytes
    }

    /// Whether the poller should wake the connection for bytes to read.
    func wantsRead(_ work: Work, maxPipelined: Int, maxHeldBytes: Int) -> Bool {
        peer == .sending && takesMore(work, maxPipelined: maxPipelined, maxHeldBytes: maxHeldBytes)
    }

    func wantsWrite(_ work: Work) -> Bool {
        work.outboundPending > 0 || (work.streaming && !streamPending)
    }

    /// Nothing of ours in flight, and nothing left for a later turn.
    func isIdle(_ work: Work) -> Bool {
        work.slots == 0 && !work.streaming && work.outboundPending == 0 && !work.heldRead && !revisitQueued
    }

    func afterWrite(_ work: Work, maxPipelined: Int, maxHeldBytes: Int) -> AfterWrite {
        if isIdle(work) {
            // Closing was asked for, or the client has finished sending (or the server is
            // shutting down) with no request part-way: there is no one left to answer.
            if phase == .closingAfterFlush || ((peer == .finished || work.draining) && !work.midRequest) { return .close }
            // The peer hung up halfway through a request: it cannot be answered.
            if peer == .finished && work.midRequest { return .close }
        }
        // Resume once earlier pipelined requests have drained, or dispatch the read that waited.
        if work.heldRead || (peer == .sending && work.unparsedInput && takesMore(work, maxPipelined: maxPipelined, maxHeldBytes: maxHeldBytes)) {
            return .takeUpInput
        }
        return .wait
    }

    func deadline(_ work: Work) -> Deadline {
        if work.outboundPending == 0 && streamPending { return .none }  // its producer always calls back
        if work.outboundPending > 0 || work.streaming { return .write }
        if work.midRequest || continueOwed { return .request }
        if work.slots > 0 { return .none }  // the handler has the request; it always answers
        return .idle
    }

    /// At the deadline: a request that did not arrive in time is answered 408; anything else closes silently.
    func answersTimeOut(_ work: Work) -> Bool {
        work.midRequest && work.slots == 0 && work.outboundPending == 0
    }

    /// On shutdown, whether to close at once (nothing in flight) rather than after the last answer.
    func closesWhenDraining(_ work: Work) -> Bool {
        isIdle(work) && !work.midRequest
    }

    /// Nothing of ours is in flight: the connection is idle, or its client is still sending a
    /// request's head or body. Such a connection may be closed to make room for another.
    func waitsOnClient(_ work: Work) -> Bool {
        work.slots == 0 && !work.heldRead && !work.streaming && work.outboundPending == 0 && release == .immediate && !continueOwed
    }

    /// Which waiting connection goes first when room is needed: one dribbling a request's head
    /// (what a slowloris socket does), then an idle keep-alive one, and last one not read yet,
    /// whose request may be whole in the socket (a probe from a load balancer, a report).
    static func evictionRank(midRequest: Bool, everRead: Bool) -> Int {
        midRequest ? 0 : everRead ? 1 : 2
    }
}
