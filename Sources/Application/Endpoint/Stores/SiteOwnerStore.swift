import DurableFiles
import PCM
import Primitives
import SiteOwners
import Locking
import PCMRecords

/// What the endpoint knows about its site owners: the registry (conversions and campaigns) and
/// the trigger ledger, with the timing model that judges reports against them.
///
/// One lock around both, so a report's judgement and the trigger it uses up are one step: two
/// reports can never both claim a trigger.
final class SiteOwnerStore: RegistryKeeper, MetricsSource {
    let model: TimingModel
    let siteRules: SiteRules
    private let file: DurableJSONFile<Registry>
    private let state: Locked<State>

    private struct State {
        var registry: Registry
        var ledger: TriggerLedger
        var lastPrune: Timestamp
    }

    init(dataDirectory: String, model: TimingModel, siteRules: SiteRules, replayed: ReplayedTriggers,
         now: Timestamp) throws {
        self.model = model
        self.siteRules = siteRules
        file = DurableJSONFile(path: dataDirectory + "/registry.json", empty: Registry())
        var ledger = TriggerLedger()
        for trigger in replayed.triggers { ledger.record(trigger) }
        for id in replayed.consumed { ledger.consume(id) }
        ledger.prune(before: Self.oldestUseful(now: now, model: model))
        state = Locked(State(registry: try file.load(), ledger: ledger, lastPrune: now))
    }

    /// A trigger older than this cannot back any report received from `now` on.
    static func oldestUseful(now: Timestamp, model: TimingModel) -> Timestamp {
        now.adding(milliseconds: -model.cutoff - TimingModel.day)
    }

    var registry: Registry { state.withLock { $0.registry } }
    var triggerCount: Int { state.withLock { $0.ledger.count } }

    /// The triggers held to judge reports, for `/metrics`.
    func prometheusText(now: Timestamp) -> String {
        let (held, forgotten) = state.withLock { ($0.ledger.count, $0.ledger.forgottenEarly) }
        return "# HELP attribution_triggers_in_memory Triggers held to judge destination copies (those of the last 7 days + 48 h, 1048576 a site at most).\n"
            + "# TYPE attribution_triggers_in_memory gauge\n"
            + "attribution_triggers_in_memory \(held)\n"
            + "# HELP attribution_triggers_forgotten_early_total Triggers let go before their window ended because their site held its most, since start (they stay in the log).\n"
            + "# TYPE attribution_triggers_forgotten_early_total counter\n"
            + "attribution_triggers_forgotten_early_total \(forgotten)\n"
    }

    // MARK: - Judging reports

    /// Judges a report received at `now`; a destination copy's trigger is marked used at once.
    /// Call `release` if the report then cannot be stored.
    func judge(_ report: PCMReport, role: ReportRole, now: Timestamp) -> TimingModel.Judgement {
        state.withLock { s in
            switch role {
            case .destination:
                var judgement = model.judgeDestinationCopy(report, receivedAt: now, ledger: s.ledger)
                if let trigger = judgement.trigger { s.ledger.consume(trigger.id) }
                // When the publisher's campaigns are registered here too, the destination copy is
                // filed under the same campaign as its source copy.
                judgement.campaign = model.campaign(of: report, receivedAt: now, registry: s.registry)
                return judgement
            case .source:
                return model.judgeSourceCopy(report, receivedAt: now, registry: s.registry)
            }
        }
    }

    func release(triggerID: UInt64) {
        state.withLock { $0.ledger.release(triggerID) }
    }

    /// Adds a trigger that is on disk; now and then forgets those too old to match anything.
    func record(_ trigger: Trigger) {
        state.withLock { s in
            s.ledger.record(trigger)
            if trigger.recordedAt.millisecondsSinceEpoch - s.lastPrune.millisecondsSinceEpoch > TimingModel.hour {
                s.ledger.prune(before: Self.oldestUseful(now: trigger.recordedAt, model: model))
                s.lastPrune = trigger.recordedAt
            }
        }
    }

    // MARK: - Registrations

    /// Applies `change` to a copy of the registry and saves it; the registry in memory changes
    /// only once the file is written.
    func update(_ change: (inout Registry) throws(RequestProblem) -> Void) throws(RequestProblem) {
        try state.withLock { (s) throws(RequestProblem) -> Void in
            var registry = s.registry
            try change(&registry)
            do {
                try file.save(registry)
            } catch {
                throw RequestProblem(.unavailable, rule: "registry_unavailable", field: nil,
                                     detail: "the registry could not be saved: \(error)")
            }
            s.registry = registry
        }
    }
}
