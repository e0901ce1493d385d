import PCM
import Primitives

/// PCM's timing model, applied to each report at receipt (PROTOCOLS.md §1.1).
///
/// A click lives 7 days; the browser sends each copy of a report 24 to 48 hours after the
/// trigger, or later if it was offline; Safari's Debug Mode sends within seconds. A report that
/// cannot have happened under that model is quarantined: stored and exported, never dropped,
/// and kept out of accepted counts. Pure functions of their inputs: no clock, no I/O.
public struct TimingModel: Sendable {
    public static let hour: Int64 = 3_600_000
    public static let day: Int64 = 24 * hour
    public static let minimumDelay: Int64 = 24 * hour
    public static let maximumDelay: Int64 = 48 * hour
    public static let clickLifetime: Int64 = 7 * day

    /// The latest a report may arrive after its trigger and still be counted (as `late`).
    public var cutoff: Int64
    /// Development mode: reports sent sooner than 24 hours (Debug Mode) are accepted, noted
    /// `debug_report`, instead of quarantined.
    public var acceptDebugReports: Bool

    public init(cutoff: Int64 = 30 * day, acceptDebugReports: Bool = false) {
        self.cutoff = cutoff
        self.acceptDebugReports = acceptDebugReports
    }

    public enum Verdict: Sendable, Equatable { case accepted, quarantined }

    public struct Judgement: Sendable, Equatable {
        public var verdict: Verdict
        /// Notes (`late`, `unverified_timing`, `debug_report`) or quarantine reasons.
        public var reasons: [String]
        /// The trigger this destination copy used up, if any.
        public var trigger: Trigger?
        /// The campaign this source copy belongs to, if any.
        public var campaign: Campaign?

        public init(_ verdict: Verdict, _ reasons: [String] = [], trigger: Trigger? = nil, campaign: Campaign? = nil) {
            self.verdict = verdict
            self.reasons = reasons
            self.trigger = trigger
            self.campaign = campaign
        }
    }

    // MARK: - Destination copies

    /// Judges a destination copy against the ledger of `attributed_on_site`. The chosen trigger
    /// is returned, not consumed: the caller marks it used once the report is stored.
    public func judgeDestinationCopy(_ report: PCMReport, receivedAt: Timestamp, ledger: TriggerLedger) -> Judgement {
        guard ledger.hasTriggers(source: report.sourceSite, destination: report.attributedOnSite) else {
            return Judgement(.accepted, ["unverified_timing"])
        }
        let r = receivedAt.millisecondsSinceEpoch
        func find(_ window: ClosedRange<Int64>) -> [Trigger] {
            ledger.candidates(source: report.sourceSite, destination: report.attributedOnSite,
                              triggerData: report.triggerData, in: window)
        }
        // In the model: the oldest first, since it is the first to fall out of the window.
        if let t = find((r - Self.maximumDelay)...(r - Self.minimumDelay)).first {
            return Judgement(.accepted, trigger: t)
        }
        // Late, after the browser was offline: the most recent such trigger is the likeliest.
        if let t = find((r - cutoff)...(r - Self.maximumDelay - 1)).last {
            return Judgement(.accepted, ["late"], trigger: t)
        }
        if let t = find((r - Self.minimumDelay + 1)...r).last {
            return acceptDebugReports ? Judgement(.accepted, ["debug_report"], trigger: t) : Judgement(.quarantined, ["debug_timing"])
        }
        if !find(Int64.min...(r - cutoff - 1)).isEmpty {
            return Judgement(.quarantined, ["too_late"])
        }
        return Judgement(.quarantined, ["no_matching_trigger"])
    }

    /// The campaign a report's click belongs to: one of `source_site` with its id and destination,
    /// active at a moment the click could have happened (up to the report itself, for Debug Mode).
    public func campaign(of report: PCMReport, receivedAt: Timestamp, registry: Registry) -> Campaign? {
        let r = receivedAt.millisecondsSinceEpoch
        return registry.campaigns.first {
            $0.sourceSite == report.sourceSite && $0.sourceID == report.sourceID && $0.destination == report.attributedOnSite
                && $0.isActive(during: (r - Self.clickLifetime - cutoff)...r)
        }
    }

    // MARK: - Source copies

    /// Judges a source copy against the campaigns of `source_site`.
    public func judgeSourceCopy(_ report: PCMReport, receivedAt: Timestamp, registry: Registry) -> Judgement {
        let campaigns = registry.campaigns.filter { $0.sourceSite == report.sourceSite }
        guard !campaigns.isEmpty else { return Judgement(.accepted, ["unverified_timing"]) }
        let withID = campaigns.filter { $0.sourceID == report.sourceID }
        guard !withID.isEmpty else { return Judgement(.quarantined, ["unknown_source_id"]) }
        let matching = withID.filter { $0.destination == report.attributedOnSite }
        guard !matching.isEmpty else { return Judgement(.quarantined, ["destination_mismatch"]) }

        // The click happened at most 7 days before the trigger, the trigger at least 24 hours
        // before the report: clicks in [r − 7 d − 48 h, r − 24 h] are in the model, and up to
        // the cut-off instead of 48 h they are late.
        let r = receivedAt.millisecondsSinceEpoch
        let latestClick = r - Self.minimumDelay
        if let c = matching.first(where: { $0.isActive(during: (r - Self.clickLifetime - Self.maximumDelay)...latestClick) }) {
            return Judgement(.accepted, campaign: c)
        }
        if let c = matching.first(where: { $0.isActive(during: (r - Self.clickLifetime - cutoff)...latestClick) }) {
            return Judgement(.accepted, ["late"], campaign: c)
        }
        if let c = matching.first(where: { $0.isActive(during: (latestClick + 1)...r) }) {
            return acceptDebugReports ? Judgement(.accepted, ["debug_report"], campaign: c) : Judgement(.quarantined, ["debug_timing"])
        }
        return Judgement(.quarantined, ["outside_campaign_window"])
    }
}
