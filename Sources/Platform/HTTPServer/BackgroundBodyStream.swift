import Dispatch
import Locking

/// A streamed body made on a `BodyProducers` thread, never on the event loop: the loop only takes
/// the pieces made so far (`next` answers `.pending` until there is one).
///
/// At most `maxBufferedPieces` pieces wait for the socket; the producer is scheduled again only
/// once the connection took one, so a client that stops reading holds that much and no more, and
/// a stalled reader's scan stops where it is.
public final class BackgroundBodyStream: HTTPBodyStream, @unchecked Sendable {
    /// Makes the next piece, of about `maxBytes`: nil at the end; an empty piece when it has
    /// nothing yet but more to look at (it is then called again after other streams' turns).
    public typealias Produce = (_ maxBytes: Int) -> [UInt8]?

    public static let maxBufferedPieces = 2

    private struct State {
        var pieces: [[UInt8]] = []
        var bufferedBytes = 0
        var ended = false
        var cancelled = false
        /// On a producer's queue or being produced: never twice at once.
        var scheduled = false
        /// Its connection has begun sending it (`whenReady`): producing may begin.
        var started = false
        /// The loop was told `.pending` and waits for `ready`.
        var loopWaits = false
        var ready: (@Sendable () -> Void)?
        /// Given back to the producers (their open count) once: at the end, on cancel, or in deinit.
        var released = false
    }

    private let state = Locked(State())
    /// Touched only by the one producer thread that has the stream scheduled; dropped (with the
    /// log cursor it holds) once the stream ends or is cancelled.
    private var produce: Produce?
    let pieceBytes: Int
    private let producers: BodyProducers

    init(producers: BodyProducers, pieceBytes: Int, produce: @escaping Produce) {
        self.producers = producers
        self.pieceBytes = pieceBytes
        self.produce = produce
    }

    deinit {
        // A response never sent (a HEAD, a withdrawn answer) still gives its place back.
        if !state.withLock({ $0.released }) { producers.released() }
    }

    // MARK: - On the loop

    /// Also starts the producing: a stream waiting behind others on its connection (pipelined)
    /// reads nothing until it is the one being sent.
    public func whenReady(_ ready: @escaping @Sendable () -> Void) {
        let start = state.withLock { s -> Bool in
            s.ready = ready
            guard !s.scheduled, !s.started, !s.cancelled else { return false }
            s.started = true
            s.scheduled = true
            return true
        }
        if start { producers.schedule(self) }
    }

    public func next(maxBytes: Int) -> HTTPBodyPiece {
        let (piece, reschedule, release) = state.withLock { s -> (HTTPBodyPiece, Bool, Bool) in
            if s.pieces.isEmpty {
                if s.ended {
                    let release = !s.released
                    s.released = true
                    return (.end, false, release)
                }
                s.loopWaits = true
                return (.pending, false, false)
            }
            let piece = s.pieces.removeFirst()
            s.bufferedBytes -= piece.count
            let reschedule = s.started && !s.ended && !s.cancelled && !s.scheduled
            if reschedule { s.scheduled = true }
            return (.bytes(piece), reschedule, false)
        }
        if reschedule { producers.schedule(self) }
        if release { producers.released() }
        return piece
    }

    public func cancel() {
        let (release, idle) = state.withLock { s -> (Bool, Bool) in
            s.cancelled = true
            s.pieces.removeAll()
            s.bufferedBytes = 0
            s.ready = nil
            let release = !s.released
            s.released = true
            return (release, !s.scheduled)
        }
        // No producer has it, and none will take it again: what it read with goes now. (One that
        // has it lets go after its piece.)
        if idle { produce = nil }
        if release { producers.released() }
    }

    // MARK: - On a producer's thread

    /// Makes one piece; true when the stream wants another turn at once. The thread that runs it
    /// owns `produce` until it clears `scheduled`, and never touches it after.
    func produceOnce() -> Bool {
        guard !state.withLock({ $0.cancelled }), let produce else {
            self.produce = nil
            state.withLock { $0.scheduled = false }
            return false
        }
        let piece = produce(pieceBytes)
        if piece == nil { self.produce = nil }
        let (again, wake, cancelled) = state.withLock { s -> (Bool, (@Sendable () -> Void)?, Bool) in
            // Cancelled meanwhile: `scheduled` stays set until the closure is dropped below.
            guard !s.cancelled else { return (false, nil, true) }
            if let piece {
                if !piece.isEmpty {
                    s.pieces.append(piece)
                    s.bufferedBytes += piece.count
                }
            } else {
                s.ended = true
            }
            let again = !s.ended && s.pieces.count < Self.maxBufferedPieces
            if !again { s.scheduled = false }
            let wake = s.loopWaits && (!s.pieces.isEmpty || s.ended) ? s.ready : nil
            if wake != nil { s.loopWaits = false }
            return (again, wake, false)
        }
        if cancelled {
            self.produce = nil
            state.withLock { $0.scheduled = false }
            return false
        }
        wake?()
        return again
    }

    /// What waits for the socket now, in bytes (tests of the bound).
    public var bufferedBytes: Int { state.withLock { $0.bufferedBytes } }
}

extension HTTPBodyStream {
    /// The whole body, waiting for each piece: for tests and tools in process, never the loop.
    public func readAll(maxBytes: Int = 64 << 10) -> [UInt8] {
        let more = DispatchSemaphore(value: 0)
        whenReady { more.signal() }
        var bytes: [UInt8] = []
        while true {
            switch next(maxBytes: maxBytes) {
            case .bytes(let piece): bytes += piece
            case .pending: more.wait()
            case .end: return bytes
            }
        }
    }
}
