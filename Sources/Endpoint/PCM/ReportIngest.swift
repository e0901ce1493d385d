import PCM
import Primitives
import SiteOwners
import HTTPServer
import PCMRecords
import ReportStore

/// The report path: from a POST to a stored report and its answer.
///
/// Everything up to the store runs inline on the event loop (validation is pure and takes
/// microseconds). The answer is prepared once the report is written, while the turn's flush is in
/// flight, and held by the event loop until the turn ends (`HTTPResponder.holdsAnswersAtTurnEnd`).
/// The summary counts the report in the same window, apart (`SummaryBook.stage`); it and the
/// metrics show the report only once it is on disk, and if the flush fails the prepared answer is
/// withdrawn and the staged counts dropped.
struct ReportIngest: Sendable {
    let validator: PCMReportValidator
    let roles: RoleResolver
    let trustedProxies: [AddressRange]
    let maxReportBytes: Int
    let store: ReportStore
    let rejections: RejectionLog
    let metrics: EndpointMetrics
    let book: SiteOwnerBook
    let summary: SummaryBook
    let tokens: TokenChecks
    let clock: @Sendable () -> Timestamp

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        switch prepare(request) {
        case .failure(let problem):
            rejections.record(time: clock(), status: problem.status, rule: problem.rule, field: problem.field,
                              detail: problem.detail, body: request.body)
            responder.respond(problem.response)
        case .success(let (draft, facts, tokenOutcome)):
            let metrics = self.metrics
            let book = self.book, summary = self.summary, tokens = self.tokens
            // An answer that cannot be held (a request from no socket) waits until the report is stored.
            let answerEarly = responder.holdsAnswersAtTurnEnd
            store.appendFollowingSteps(draft) { step in
                switch step {
                case .written(let record):
                    // Counted while the flush is in flight, shown once it succeeds.
                    summary.stage(StoredReport(draft, record), facts)
                    guard answerEarly else { return }
                    responder.respond(Self.acknowledgement(id: record.id, receivedAt: record.time,
                                                           draft.role, draft.verdict, draft.reasons))
                case .stored(let record):
                    summary.commitStaged()
                    metrics.stored(draft)
                    guard !answerEarly else { return }
                    responder.respond(Self.acknowledgement(id: record.id, receivedAt: record.time,
                                                           draft.role, draft.verdict, draft.reasons))
                case .failed(let error):
                    summary.dropStaged()
                    // The report is not kept, so the trigger it would have used stays free.
                    if let trigger = draft.triggerID { book.release(triggerID: trigger) }
                    // Nor are its tokens: the browser's next delivery is no replay.
                    tokens.forget(tokenOutcome)
                    metrics.storeFailed(error)
                    // An acknowledgement prepared during the flush never leaves; if none was, this is the answer.
                    responder.withdraw()
                    responder.respond(Problem.storeFailed(error, "the report could not be stored").response)
                }
            }
        }
    }

    /// Checks the request and the body; on success, the draft to store.
    func prepare(_ request: HTTPRequest) -> Result<(StoredReport.Draft, ReportFacts, TokenChecks.Outcome), Problem> {
        guard request.headers.withFirstValue("Content-Type", Self.isJSON) == true else {
            let got = request.headers["Content-Type"].map { "\"\($0)\"" } ?? "none"
            return .failure(Problem(ReportRejection(.unsupportedMediaType,
                "a report must be sent as application/json; Content-Type was \(got)")))
        }
        guard request.body.count <= maxReportBytes else {
            return .failure(Problem(ReportRejection(.bodyTooLarge,
                "the body has \(request.body.count) bytes; reports are at most \(maxReportBytes)")))
        }
        let report: PCMReport
        switch validator.validate(body: request.body) {
        case .success(let r): report = r
        case .failure(let rejection): return .failure(Problem(rejection))
        }
        let host: String?
        do { host = try RequestedHost.of(request, trustedProxies: trustedProxies) } catch { return .failure(error) }
        let resolution: RoleResolver.Resolution
        switch roles.resolve(report, host: host) {
        case .success(let r): resolution = r
        case .failure(let rejection): return .failure(Problem(rejection))
        }
        var reasons = resolution.notes
        if report.usedDashKeys { reasons.append("dash_keys_normalized") }
        let judgement = book.judge(report, role: resolution.role, now: clock())
        // Most reports have no reasons at all; appending nothing still cost a call each.
        if !judgement.reasons.isEmpty { reasons += judgement.reasons }
        let tokenOutcome = tokens.check(report, role: resolution.role)
        if !tokenOutcome.reasons.isEmpty { reasons += tokenOutcome.reasons }
        var trigger = judgement.trigger
        if tokenOutcome.quarantine, let claimed = trigger {
            // A report whose token is forged or replayed is no conversion: the trigger stays for a real one.
            book.release(triggerID: claimed.id)
            trigger = nil
        }
        let accepted = judgement.verdict == .accepted && !tokenOutcome.quarantine
        var draft = StoredReport.Draft(role: resolution.role, verdict: accepted ? .accepted : .quarantined,
                                       reasons: reasons, body: request.body, triggerID: trigger?.id,
                                       campaign: judgement.campaign?.name, triggerRecordedAt: trigger?.recordedAt)
        draft.tokenKeyIDs = tokenOutcome.keyIDs
        return .success((draft, ReportFacts(report), tokenOutcome))
    }

    /// `application/json`, any case, optionally followed by parameters.
    static func isJSON(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let expected: StaticString = "application/json"
        var i = 0
        while i < bytes.count && bytes[i] == UInt8(ascii: " ") { i += 1 }
        guard bytes.count - i >= expected.utf8CodeUnitCount else { return false }
        for k in 0..<expected.utf8CodeUnitCount {
            let c = bytes[i + k]
            if (c >= 65 && c <= 90 ? c | 0x20 : c) != expected.utf8Start[k] { return false }
        }
        i += expected.utf8CodeUnitCount
        while i < bytes.count && (bytes[i] == UInt8(ascii: " ") || bytes[i] == UInt8(ascii: "\t")) { i += 1 }
        return i == bytes.count || bytes[i] == UInt8(ascii: ";")
    }

    /// `{"id":7,"received_at":"…","role":"source","verdict":"accepted","reasons":[]}`, written as bytes:
    /// every stored report is answered with one. A quarantined report is stored all the same, so it
    /// is acknowledged with 201 too; its verdict and reasons say why it is kept out of the counts.
    static func acknowledgement(id: UInt64, receivedAt: Timestamp, _ role: ReportRole, _ verdict: StoredReport.Verdict,
                                _ reasons: [String]) -> HTTPResponse {
        var json: [UInt8] = []
        json.reserveCapacity(128)
        json.append(ascii: #"{"id":"#)
        json.append(decimal: Int(id))
        json.append(ascii: #","received_at":""#)
        receivedAt.appendRFC3339(to: &json)
        json.append(ascii: middle(role, verdict))
        for (i, reason) in reasons.enumerated() {
            if i > 0 { json.append(UInt8(ascii: ",")) }
            // Reasons are the endpoint's own snake_case words; anything else is escaped.
            if reason.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }) {
                json.append(UInt8(ascii: "\""))
                json.append(utf8: reason)
                json.append(UInt8(ascii: "\""))
            } else {
                var quoted = ""
                JSONValue.writeString(reason, to: &quoted)
                json.append(utf8: quoted)
            }
        }
        json.append(ascii: "]}\n")
        return HTTPResponse(status: 201, headers: JSONResponse.headers, body: json)
    }

    /// The acknowledgement's words between the time and the reasons, one constant for each role
    /// and verdict: written with one copy instead of four.
    private static func middle(_ role: ReportRole, _ verdict: StoredReport.Verdict) -> StaticString {
        switch (role, verdict) {
        case (.source, .accepted): #"","role":"source","verdict":"accepted","reasons":["#
        case (.source, .quarantined): #"","role":"source","verdict":"quarantined","reasons":["#
        case (.destination, .accepted): #"","role":"destination","verdict":"accepted","reasons":["#
        case (.destination, .quarantined): #"","role":"destination","verdict":"quarantined","reasons":["#
        }
    }
}
