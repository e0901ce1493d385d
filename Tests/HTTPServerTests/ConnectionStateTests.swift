@testable import HTTPServer
import Testing

/// A connection's state walked through the lives a client gives it, without a socket: each test is
/// one client's story, and what the connection must decide at each step.
@Suite struct ConnectionStateTests {
    typealias Work = ConnectionState.Work
    let pipelined = 64
    let held = 256 * 1024

    func afterWrite(_ state: ConnectionState, _ work: Work) -> ConnectionState.AfterWrite {
        state.afterWrite(work, maxPipelined: pipelined, maxHeldBytes: held)
    }

    @Test func aKeepAliveClientIsReadAnsweredAndKeptUntilItsIdleTimeOut() {
        var state = ConnectionState()
        #expect(state.reads)
        // A request in the handler's hands: no deadline of the client's, nothing to close.
        let inHandler = Work(slots: 1)
        #expect(state.deadline(inHandler) == .none)
        #expect(!state.waitsOnClient(inHandler))
        // Answered and written: idle, waiting for the next request.
        #expect(afterWrite(state, Work()) == .wait)
        #expect(state.deadline(Work()) == .idle)
        #expect(state.waitsOnClient(Work()))
        #expect(state.wantsRead(Work(), maxPipelined: pipelined, maxHeldBytes: held))
        // At the idle deadline it closes without a word.
        #expect(!state.answersTimeOut(Work()))
        let closed = state.close()
        #expect(closed)
        let closedAgain = state.close()
        #expect(!closedAgain, "closing happens once")
        #expect(state.isClosed)
    }

    @Test func anAnswerThatSaysCloseClosesOnceEverythingQueuedHasLeft() {
        var state = ConnectionState()
        state.closeAfterFlush()
        #expect(!state.reads, "no further request is read")
        #expect(state.phase == .closingAfterFlush)
        // Bytes still queued for the client: wait for the socket, under the write time-out.
        let writing = Work(outboundPending: 1_000)
        #expect(afterWrite(state, writing) == .wait)
        #expect(state.deadline(writing) == .write)
        #expect(state.wantsWrite(writing))
        #expect(!state.wantsRead(writing, maxPipelined: pipelined, maxHeldBytes: held))
        #expect(afterWrite(state, Work()) == .close)
    }

    @Test func aClientThatHalfClosesAfterWholeRequestsIsAnsweredThenClosed() {
        var state = ConnectionState()
        state.peerFinished()
        #expect(!state.reads)
        // Pipelined requests left for the next turn are still owed their answers.
        state.revisitQueued = true
        #expect(afterWrite(state, Work()) == .wait)
        state.revisitQueued = false
        // Requests in the handler's hands: not idle.
        #expect(afterWrite(state, Work(slots: 2)) == .wait)
        // Everything answered and sent: there is no one left to answer.
        #expect(afterWrite(state, Work()) == .close)
    }

    @Test func aClientThatHangsUpHalfwayThroughARequestIsClosedUnanswered() {
        var state = ConnectionState()
        state.peerFinished()
        #expect(afterWrite(state, Work(midRequest: true)) == .close)
    }

    @Test func aRequestThatDoesNotArriveInTimeIsAnswered408() {
        let state = ConnectionState()
        let dribbling = Work(midRequest: true)
        #expect(state.deadline(dribbling) == .request)
        #expect(state.answersTimeOut(dribbling))
        // A slow client with answers of its own queued is closed without a 408 after them.
        #expect(!state.answersTimeOut(Work(slots: 1, midRequest: true)))
        #expect(!state.answersTimeOut(Work(outboundPending: 10, midRequest: true)))
    }

    @Test func aClientWaitingFor100ContinueIsUnderTheRequestTimeOutAndNotEvicted() {
        var state = ConnectionState()
        state.continueOwed = true
        #expect(state.deadline(Work()) == .request)
        #expect(!state.waitsOnClient(Work()), "it was promised an answer")
    }

    @Test func heldAnswersGoAtTheTurnsEndUnlessOneWasWithdrawn() {
        var state = ConnectionState()
        // A withdrawal with nothing held is nothing.
        state.withdraw()
        #expect(state.release == .immediate)
        let told = state.hold()
        #expect(told, "the first hold tells the loop")
        let toldAgain = state.hold()
        #expect(!toldAgain, "once a turn")
        #expect(state.isHeld)
        #expect(!state.waitsOnClient(Work()), "held answers are in flight")
        let sent = state.released()
        #expect(sent)
        #expect(!state.isHeld)
        // The next turn: held again, one answer withdrawn (its record was not stored): close.
        let toldNextTurn = state.hold()
        #expect(toldNextTurn)
        state.withdraw()
        #expect(state.release == .withdrawn)
        let toldAfterWithdrawal = state.hold()
        #expect(!toldAfterWithdrawal)
        let sentAfterWithdrawal = state.released()
        #expect(!sentAfterWithdrawal)
        #expect(state.release == .immediate)
    }

    @Test func pipeliningIsTakenUpToItsBoundsAndResumedWhenTheyDrain() {
        let state = ConnectionState()
        let full = Work(slots: pipelined, unparsedInput: true)
        #expect(!state.takesMore(full, maxPipelined: pipelined, maxHeldBytes: held))
        #expect(!state.wantsRead(full, maxPipelined: pipelined, maxHeldBytes: held))
        #expect(afterWrite(state, full) == .wait)
        // A client that reads nothing: answers pile up to the bound, then nothing more is taken.
        let unread = Work(slots: 3, answeredBytes: held / 2, unparsedInput: true)
        #expect(!state.takesMore(Work(slots: 3, outboundPending: held / 2, answeredBytes: held / 2), maxPipelined: pipelined, maxHeldBytes: held))
        #expect(afterWrite(state, unread) == .takeUpInput)
        // Drained with requests still in the buffer: parse on.
        #expect(afterWrite(state, Work(slots: 1, unparsedInput: true)) == .takeUpInput)
        // A read held behind a write goes once the writes are answered, whatever else holds.
        var stopped = state
        stopped.stopTakingRequests()
        #expect(stopped.afterWrite(Work(heldRead: true), maxPipelined: pipelined, maxHeldBytes: held) == .takeUpInput)
        #expect(stopped.afterWrite(Work(slots: 1, unparsedInput: true), maxPipelined: pipelined, maxHeldBytes: held) == .wait)
    }

    @Test func aStreamWaitingForItsProducerHasNoDeadlineAndIsNotWritable() {
        var state = ConnectionState()
        let streaming = Work(streaming: true)
        #expect(state.deadline(streaming) == .write)
        #expect(state.wantsWrite(streaming))
        state.streamPending = true
        #expect(state.deadline(streaming) == .none, "its producer always calls back")
        #expect(!state.wantsWrite(streaming))
        #expect(!state.waitsOnClient(streaming))
        #expect(state.deadline(Work(streaming: true, outboundPending: 5)) == .write)
    }

    @Test func shutdownClosesTheIdleAtOnceAndLetsARequestBeingReadFinish() {
        var idle = ConnectionState()
        idle.drain(midRequest: false)
        #expect(!idle.reads)
        #expect(idle.closesWhenDraining(Work(draining: true)))

        var reading = ConnectionState()
        reading.drain(midRequest: true)
        #expect(reading.reads, "the request being read is still taken")
        #expect(!reading.closesWhenDraining(Work(midRequest: true, draining: true)))
        // Once it is answered and sent, the drain closes it.
        #expect(reading.afterWrite(Work(draining: true), maxPipelined: pipelined, maxHeldBytes: held) == .close)
        #expect(reading.afterWrite(Work(midRequest: true, draining: true), maxPipelined: pipelined, maxHeldBytes: held) == .wait)
    }

    @Test func atTheCapTheSlowlorisGoesFirstThenTheIdleThenTheUnread() {
        #expect(ConnectionState.evictionRank(midRequest: true, everRead: true) == 0)
        #expect(ConnectionState.evictionRank(midRequest: false, everRead: true) == 1)
        #expect(ConnectionState.evictionRank(midRequest: false, everRead: false) == 2)
    }
}
