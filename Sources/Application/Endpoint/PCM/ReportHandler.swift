import PCM
import Primitives
import HTTPServer
import PCMRecords
import RecordLog

/// The report path: from a POST to a stored report and its answer (`AnswerOnCommit`).
///
/// Everything up to the store runs inline on the event loop (validation is pure and takes
/// microseconds). The summary counts the report while its flush is in flight, apart
/// (`SummaryStore.stage`); it and the metrics show the report only once it is on disk, and if the
/// flush fails the staged counts are dropped and what the report claimed is given back.
struct ReportHandler: Sendable {
    /// The wire rules: fields, types, ranges, sites.
    let validator: PCMReportValidator
    /// Which copy a report is, from the site it was sent to.
    let roles: RoleResolver
    let maxReportBytes: Int
    let store: RecordLog
    /// The registrations and the trigger ledger, for the verdict.
    let book: SiteOwnerStore
    let summary: SummaryStore
    let tokens: TokenChecks
    let context: HandlerContext

    func handle(_ request: HTTPRequest, responder: HTTPResponder) throws {
        // Read once: what arrived where, and which copy the report is.
        let host = try RequestedHost.of(request, trustedProxies: context.trustedProxies)
        let site = context.served.owner(ofHost: host)
        if let site { context.arrived(.pcmReports, at: site) }
        let (draft, facts, tokenOutcome) = try prepare(request, host: host)
        let answer = AnswerOnCommit(responder: responder, metrics: context.metrics, failure: "the report could not be stored")
        var accepted: (@Sendable (Timestamp) -> Void)?
        if let site { accepted = { [context] time in context.accepted(.pcmReports, at: site, time: time) } }
        store.append(draft, steps: answer.steps(StoringReport(draft: draft, facts: facts, tokenOutcome: tokenOutcome, summary: summary,
                                                              metrics: context.metrics, book: book, tokens: tokens, accepted: accepted)))
    }

    /// A report on its way to disk: acknowledged once written, counted once stored, and if it is
    /// not kept, the trigger and the tokens it claimed are free again.
    struct StoringReport: CommittedAnswer {
        static let answersWhileFlushing = true
        let draft: StoredReport.Draft
        let facts: ReportFacts
        let tokenOutcome: TokenChecks.Outcome
        let summary: SummaryStore
        let metrics: EndpointMetrics
        let book: SiteOwnerStore
        let tokens: TokenChecks
        /// Notes an accepted report's arrival (`Arrivals`): a quarantined one only reached the path.
        let accepted: (@Sendable (Timestamp) -> Void)?

        func answer(_ record: RecordLog.AppendedRecord) -> HTTPResponse {
            // Counted while the flush is in flight, shown once it succeeds.
            summary.stage(StoredReport(draft, record), facts)
            return ReportHandler.acknowledgement(id: record.id, receivedAt: record.time, draft.role, draft.verdict, draft.reasons)
        }

        func stored(_ record: RecordLog.AppendedRecord) {
            summary.commitStaged()
            metrics.stored(draft)
            if draft.verdict == .accepted { accepted?(record.time) }
        }

        func undo() {
            summary.dropStaged()
            // The browser's next delivery is then a first one: no trigger used, no token replayed.
            if let trigger = draft.triggerID { book.release(triggerID: trigger) }
            tokens.forget(tokenOutcome)
        }
    }

    /// Checks the request and the body; the draft to store, or the refusal.
    func prepare(_ request: HTTPRequest, host: String?) throws -> (StoredReport.Draft, ReportFacts, TokenChecks.Outcome) {
        guard request.headers.withFirstValue("Content-Type", Self.isJSON) == true else {
            let got = request.headers["Content-Type"].map { "\"\($0)\"" } ?? "none"
            throw Problem(status: 415, rule: "unsupported_media_type",
                          detail: "a report must be sent as application/json; Content-Type was \(got)")
        }
        guard request.body.count <= maxReportBytes else {
            throw Problem(status: 413, rule: "body_too_large",
                          detail: "the body has \(request.body.count) bytes; reports are at most \(maxReportBytes)")
        }
        let report = try validator.validate(body: request.body).get()
        let resolution = try roles.resolve(report, host: host).get()
        var reasons = resolution.notes
        if report.usedDashKeys { reasons.append("dash_keys_normalized") }
        let judgement = book.judge(report, role: resolution.role, now: context.clock())
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
        return (draft, ReportFacts(report), tokenOutcome)
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

    /// `{"id":7,"received_at":"…","role":"source","verdict":"accepted","reasons":[]}`: every stored
    /// report is answered with one. A quarantined report is stored all the same, so it is
    /// acknowledged with 201 too; its verdict and reasons say why it is kept out of the counts.
    static func acknowledgement(id: UInt64, receivedAt: Timestamp, _ role: ReportRole, _ verdict: StoredReport.Verdict,
                                _ reasons: [String]) -> HTTPResponse {
        var ack = Acknowledgement(id: id)
        ack.appendReceivedAt(receivedAt)
        ack.append(roleAndVerdict(role, verdict))
        ack.appendReasons(reasons)
        return ack.response(status: 201)
    }

    /// One constant for each role and verdict: written with one copy instead of four.
    private static func roleAndVerdict(_ role: ReportRole, _ verdict: StoredReport.Verdict) -> StaticString {
        switch (role, verdict) {
        case (.source, .accepted): #","role":"source","verdict":"accepted""#
        case (.source, .quarantined): #","role":"source","verdict":"quarantined""#
        case (.destination, .accepted): #","role":"destination","verdict":"accepted""#
        case (.destination, .quarantined): #","role":"destination","verdict":"quarantined""#
        }
    }
}
