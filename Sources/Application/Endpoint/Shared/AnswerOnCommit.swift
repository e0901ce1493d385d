import HTTPServer
import RecordLog

/// What a handler does at each step of a record's way to disk, when its answer says the record
/// is kept: the answer, what others may see once the record is stored, and what to give back if
/// it is not.
protocol CommittedAnswer: Sendable {
    /// True: the answer is made once the record is written, while its flush may still be in
    /// flight, and withdrawn if the flush fails (a report's acknowledgement, prepared in the
    /// disk's time). False: it is made once the record is on disk, and a failure is a 503.
    static var answersWhileFlushing: Bool { get }
    /// The answer.
    func answer(_ record: RecordLog.AppendedRecord) -> HTTPResponse
    /// The record is on disk: counts and ledgers may show it.
    func stored(_ record: RecordLog.AppendedRecord)
    /// The record was not kept: give back what it claimed.
    func undo()
}

extension CommittedAnswer {
    static var answersWhileFlushing: Bool { false }
    func stored(_ record: RecordLog.AppendedRecord) {}
    func undo() {}
}

/// The one way a handler answers a request whose answer says a record is kept: a report, a
/// trigger, a postback or its retry, an Apple Ads token.
///
/// `steps` is handed to the store with the record. The endpoint commits at the end of each
/// event-loop turn (`RecordLog.commitQueued(overlappingFlush: true)`), and every answer given
/// then is held by the loop until the turn ends, by when the flush has said whether it held. An
/// answer that `answersWhileFlushing` (a report's) is made once the record is written, in the
/// disk's time, and withdrawn if the flush then fails, so its connection closes with nothing
/// sent; any other is made once the record is on disk. What others would see (`stored`: counts,
/// ledgers) waits for the flush. If the record is not kept, `undo` gives back what it had
/// claimed, and a request not answered yet gets a 503. `completion` is the same for a record its
/// owner appends (the Apple Ads outbox): the answer once it is on disk, else the 503.
struct AnswerOnCommit: Sendable {
    let responder: HTTPResponder
    /// Where a failure is counted (`attribution_store_write_failures_total`, and `/healthz`'s
    /// failing state); nil for what never counted there (triggers).
    let metrics: EndpointMetrics?
    /// What the 503 says could not be kept: "the report could not be stored".
    let failure: String

    /// One closure over one value, whatever the answer: the report path's one allocation for
    /// its answer's steps.
    func steps<Answer: CommittedAnswer>(_ answer: Answer) -> RecordLog.RecordSteps {
        let (responder, metrics, failure) = (self.responder, self.metrics, self.failure)
        return { step in
            switch step {
            case .written(let record):
                if Answer.answersWhileFlushing { responder.respond(answer.answer(record)) }
            case .stored(let record):
                answer.stored(record)
                if !Answer.answersWhileFlushing { responder.respond(answer.answer(record)) }
            case .failed(let error):
                answer.undo()
                metrics?.storeFailed(error)
                if Answer.answersWhileFlushing { responder.withdraw() }
                responder.respond(Problem.storeFailed(error, failure).response)
            }
        }
    }

    /// The same, from closures: for the paths where a type of its own would say less.
    func steps(answer: @escaping @Sendable (RecordLog.AppendedRecord) -> HTTPResponse,
               stored: @escaping @Sendable (RecordLog.AppendedRecord) -> Void = { _ in },
               undo: @escaping @Sendable () -> Void = {}) -> RecordLog.RecordSteps {
        steps(ClosureAnswer(make: answer, onStored: stored, onUndo: undo))
    }

    func completion<Kept>(answer: @escaping @Sendable (Kept) -> HTTPResponse) -> @Sendable (Result<Kept, StoreError>) -> Void {
        let (responder, metrics, failure) = (self.responder, self.metrics, self.failure)
        return { result in
            switch result {
            case .success(let kept):
                responder.respond(answer(kept))
            case .failure(let error):
                metrics?.storeFailed(error)
                responder.respond(Problem.storeFailed(error, failure).response)
            }
        }
    }
}

private struct ClosureAnswer: CommittedAnswer {
    let make: @Sendable (RecordLog.AppendedRecord) -> HTTPResponse
    let onStored: @Sendable (RecordLog.AppendedRecord) -> Void
    let onUndo: @Sendable () -> Void

    func answer(_ record: RecordLog.AppendedRecord) -> HTTPResponse { make(record) }
    func stored(_ record: RecordLog.AppendedRecord) { onStored(record) }
    func undo() { onUndo() }
}
