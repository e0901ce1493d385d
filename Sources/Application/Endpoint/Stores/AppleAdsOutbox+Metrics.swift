import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

extension AppleAdsOutbox: MetricsSource {
    /// The outbox's series for `/metrics`: what waits, how old the oldest is, what calls came
    /// to, and whether calls are paused.
    func prometheusText(now: Timestamp) -> String {
        let (pending, oldest, counts, pause) = state.withLock { s in
            (s.pending.count + s.queued, s.oldestPending()?.receivedAt, s.counts, s.schedule.pause)
        }
        var out = MetricSeries.gauge("attribution_apple_ads_rebuild_pending",
                                     "1 while the outbox reads the log again after a start found a digest it could not trust (its paths answer 503 meanwhile, and the gauges below are not yet its).",
                                     isReady ? 0 : 1)
        out += "# HELP attribution_apple_ads_pending Apple Ads tokens without a final answer (the limit is attribution_apple_ads_max_pending).\n"
        out += "# TYPE attribution_apple_ads_pending gauge\nattribution_apple_ads_pending \(pending)\n"
        out += "# HELP attribution_apple_ads_tokens_in_memory Tokens the outbox holds: waiting, answered in the last day, or settled by an earlier version's final calls, which do not carry their token.\n"
        out += "# TYPE attribution_apple_ads_tokens_in_memory gauge\nattribution_apple_ads_tokens_in_memory \(entriesInMemory)\n"
        out += "# HELP attribution_apple_ads_max_pending Tokens that may wait for Apple at once; past it new ones are answered 503.\n"
        out += "# TYPE attribution_apple_ads_max_pending gauge\nattribution_apple_ads_max_pending \(maxPending)\n"
        let age = oldest.map { max(0, now.millisecondsSinceEpoch - $0.millisecondsSinceEpoch) / 1000 } ?? 0
        out += "# HELP attribution_apple_ads_oldest_pending_seconds Age of the oldest token still waiting for Apple's final answer (0: none).\n"
        out += "# TYPE attribution_apple_ads_oldest_pending_seconds gauge\nattribution_apple_ads_oldest_pending_seconds \(age)\n"
        out += "# HELP attribution_apple_ads_calls_total Calls to Apple's attribution API since start, by what came of them.\n"
        out += "# TYPE attribution_apple_ads_calls_total counter\n"
        for outcome in ["attributed", "not_attributed", "invalid_token", "not_found", "refused", "retry_not_found", "unavailable", "expired"] {
            out += "attribution_apple_ads_calls_total{outcome=\"\(outcome)\"} \(counts.calls[outcome, default: 0])\n"
        }
        out += "# HELP attribution_apple_ads_backlogged_total Tokens refused with 503 because the outbox was full.\n"
        out += "# TYPE attribution_apple_ads_backlogged_total counter\nattribution_apple_ads_backlogged_total \(counts.backlogged)\n"
        out += "# HELP attribution_apple_ads_api_paused 1 while calls wait because Apple's API did not answer; the next probe's time is in _paused_until_seconds.\n"
        out += "# TYPE attribution_apple_ads_api_paused gauge\nattribution_apple_ads_api_paused \(pause == nil ? 0 : 1)\n"
        out += "# HELP attribution_apple_ads_api_paused_until_seconds When the next probe of a paused API may go, Unix seconds (0: not paused).\n"
        out += "# TYPE attribution_apple_ads_api_paused_until_seconds gauge\n"
        out += "attribution_apple_ads_api_paused_until_seconds \(pause.map { $0.until / 1000 } ?? 0)\n"
        return out
    }
}
