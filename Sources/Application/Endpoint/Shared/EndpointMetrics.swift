import PCM
import Primitives
import Foundation
import PCMRecords
import Postbacks
import RecordLog
import HTTPServer
import Locking

/// Counters for `/metrics` and `/healthz`. Aggregates only.
final class EndpointMetrics: Sendable {
    private struct Counts {
        var stored: [Kind: Int] = [:]
        var storeFailures = 0
        var diskFullFailures = 0
        var lastStoreFailure: Date?
        var postbacks: [PostbackKind: Int] = [:]
        var postbackRetries: [AttributionProtocol: Int] = [:]
        var tokensSigned: [String: Int] = [:]
        /// Conversion-value answers by app and outcome (`window_1`…`window_3`, `single_window`,
        /// `window_closed`, or the refusal's rule): the only trace the app's counters leave.
        var conversionValueAnswers: [ConversionValueOutcome: Int] = [:]
    }

    struct ConversionValueOutcome: Hashable {
        var appID: Int?
        var outcome: String
    }

    private struct PostbackKind: Hashable {
        var `protocol`: AttributionProtocol
        var verdict: PostbackVerdict
        var signature: SignatureOutcome
    }
    private let counts = Locked(Counts())

    /// What stored reports are counted by. A struct key rather than a "role/verdict" string: this
    /// runs for every report.
    private struct Kind: Hashable {
        var `protocol`: AttributionProtocol
        var role: ReportRole
        var verdict: StoredReport.Verdict
    }

    /// A report is on disk, as it was drafted.
    func stored(_ report: StoredReport.Draft) {
        let kind = Kind(protocol: report.protocol, role: report.role, verdict: report.verdict)
        counts.withLock { $0.stored[kind, default: 0] += 1 }
    }

    func postbackStored(_ postback: StoredPostback) {
        let kind = PostbackKind(protocol: postback.protocol, verdict: postback.draft.verdict, signature: postback.draft.signature)
        counts.withLock { $0.postbacks[kind, default: 0] += 1 }
    }

    func postbackRetried(_ proto: AttributionProtocol) {
        counts.withLock { $0.postbackRetries[proto, default: 0] += 1 }
    }

    func tokenSigned(_ side: UnlinkableTokenRequest.Side) {
        counts.withLock { $0.tokensSigned[side.rawValue, default: 0] += 1 }
    }

    func conversionValueAnswered(appID: Int?, outcome: String) {
        counts.withLock { $0.conversionValueAnswers[ConversionValueOutcome(appID: appID, outcome: outcome), default: 0] += 1 }
    }

    func storeFailed(_ error: StoreError) {
        let firstInAWhile = counts.withLock { c -> Bool in
            let quiet = c.lastStoreFailure.map { Date().timeIntervalSince($0) > 10 } ?? true
            c.storeFailures += 1
            if error.isDiskFull { c.diskFullFailures += 1 }
            c.lastStoreFailure = Date()
            return quiet
        }
        // One line when failures start, not one per refused report.
        if firstInAWhile { EventLog.write("store_write_failed", ["error": .string(error.description), "disk_full": .bool(error.isDiskFull)]) }
    }

    /// True when a write failed in the last few seconds and none has succeeded since.
    func storeIsFailing(_ store: RecordLog) -> Bool {
        guard store.writeError != nil else { return false }
        return counts.withLock { c in c.lastStoreFailure.map { Date().timeIntervalSince($0) < 5 } ?? false }
    }

    func prometheusText(store: RecordLog, rejections: RejectionLog) -> String {
        let c = counts.withLock { $0 }
        var out = "# HELP attribution_reports_stored_total Reports stored since start, by role and verdict.\n"
        out += "# TYPE attribution_reports_stored_total counter\n"
        let stored = c.stored.map { (protocol: $0.key.protocol.name, role: $0.key.role.rawValue, verdict: $0.key.verdict.name, count: $0.value) }
        for (name, role, verdict, value) in stored.sorted(by: { ($0.protocol, $0.role, $0.verdict) < ($1.protocol, $1.role, $1.verdict) }) {
            out += "attribution_reports_stored_total{protocol=\"\(name)\",role=\"\(role)\",verdict=\"\(verdict)\"} \(value)\n"
        }
        out += "# HELP attribution_postbacks_stored_total Postback copies stored since start, by protocol, verdict and signature.\n"
        out += "# TYPE attribution_postbacks_stored_total counter\n"
        let postbacks = c.postbacks.map { (p: $0.key.protocol.name, v: $0.key.verdict.name, s: $0.key.signature.name, n: $0.value) }
        for row in postbacks.sorted(by: { ($0.p, $0.v, $0.s) < ($1.p, $1.v, $1.s) }) {
            out += "attribution_postbacks_stored_total{protocol=\"\(row.p)\",verdict=\"\(row.v)\",signature=\"\(row.s)\"} \(row.n)\n"
        }
        out += "# HELP attribution_postback_retries_total Repeated deliveries of stored postbacks, counted and not stored again.\n"
        out += "# TYPE attribution_postback_retries_total counter\n"
        for (proto, n) in c.postbackRetries.sorted(by: { $0.key.name < $1.key.name }) {
            out += "attribution_postback_retries_total{protocol=\"\(proto.name)\"} \(n)\n"
        }
        out += "# HELP attribution_tokens_signed_total PCM unlinkable tokens blind-signed since start, by side.\n"
        out += "# TYPE attribution_tokens_signed_total counter\n"
        for side in ["destination", "source"] {
            out += "attribution_tokens_signed_total{side=\"\(side)\"} \(c.tokensSigned[side, default: 0])\n"
        }
        out += "# HELP attribution_conversion_value_answers_total Conversion-value API answers since start, by app and outcome.\n"
        out += "# TYPE attribution_conversion_value_answers_total counter\n"
        let answers = c.conversionValueAnswers.map { (app: $0.key.appID.map(String.init) ?? "", outcome: $0.key.outcome, n: $0.value) }
        for row in answers.sorted(by: { ($0.app, $0.outcome) < ($1.app, $1.outcome) }) {
            out += "attribution_conversion_value_answers_total{app_id=\"\(row.app)\",outcome=\"\(row.outcome)\"} \(row.n)\n"
        }
        out += "# HELP attribution_requests_rejected_total Requests refused, by rule.\n"
        out += "# TYPE attribution_requests_rejected_total counter\n"
        for (rule, value) in rejections.counts.sorted(by: { $0.key < $1.key }) {
            out += "attribution_requests_rejected_total{rule=\"\(rule)\"} \(value)\n"
        }
        out += "# HELP attribution_store_write_failures_total Reports answered 503 because the log could not be written.\n"
        out += "# TYPE attribution_store_write_failures_total counter\n"
        out += "attribution_store_write_failures_total \(c.storeFailures)\n"
        out += "# HELP attribution_store_disk_full_failures_total Of those, failures because the disk was full.\n"
        out += "# TYPE attribution_store_disk_full_failures_total counter\n"
        out += "attribution_store_disk_full_failures_total \(c.diskFullFailures)\n"
        out += "# HELP attribution_store_flushes_total Write-and-fdatasync rounds (group commit shares one among many reports).\n"
        out += "# TYPE attribution_store_flushes_total counter\n"
        out += "attribution_store_flushes_total \(store.flushes)\n"
        out += "# HELP attribution_store_reports Reports in the log.\n# TYPE attribution_store_reports gauge\n"
        out += "attribution_store_reports \(store.count(of: .report))\n"
        out += "# HELP attribution_store_bytes Bytes ever written to the log, removed segments included (its end offset; attribution_log_bytes is what is on disk).\n# TYPE attribution_store_bytes gauge\n"
        out += "attribution_store_bytes \(store.bytesOnDisk)\n"
        out += "# HELP attribution_replay_corrupt_records Damaged records skipped when the log was opened.\n"
        out += "# TYPE attribution_replay_corrupt_records gauge\n"
        out += "attribution_replay_corrupt_records \(store.replay.corruptRecords.count)\n"
        out += "# HELP attribution_replay_torn_tail_bytes Bytes of an incomplete last record cut off when the log was opened.\n"
        out += "# TYPE attribution_replay_torn_tail_bytes gauge\n"
        out += "attribution_replay_torn_tail_bytes \(store.replay.tornTailBytes)\n"
        out += "# HELP attribution_log_lines_dropped_total Log lines (access log and events) dropped because stderr's reader did not keep up.\n"
        out += "# TYPE attribution_log_lines_dropped_total counter\n"
        out += "attribution_log_lines_dropped_total \(LineWriter.standardError.droppedLines)\n"
        return out
    }
}
