import Foundation
import Primitives
import Relaying
import Relays

/// Each relay destination's series for `/metrics`, labelled by its name.
struct RelayMetrics: MetricsSource {
    let service: RelayService

    func prometheusText(now: Timestamp) -> String {
        let statuses = service.statuses
        guard !statuses.isEmpty else { return "" }
        var out = ""
        /// A family with a series for each destination that has a value; none at all without one.
        func family(_ name: String, _ type: String, _ help: String, _ value: (RelayDelivery.Status) -> String?) {
            let series = statuses.compactMap { status in value(status).map { "\(name){destination=\"\(MetricSeries.label(status.name))\"} \($0)\n" } }
            guard !series.isEmpty else { return }
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n" + series.joined()
        }
        family("attribution_relay_copies_delivered_total", "counter",
               "Copies a relay destination answered with a 2xx, since its cursor began.") { String($0.delivered) }
        family("attribution_relay_copies_refused_total", "counter",
               "Copies a relay destination refused (a 3xx or a 4xx other than 408 and 429): never sent again.") { String($0.refused) }
        family("attribution_relay_expirations_total", "counter",
               "Times retention removed log segments a relay destination had not taken all of: their copies were never delivered.") { String($0.expirations) }
        family("attribution_relay_retrying", "gauge",
               "1 while a relay destination's next copy waits to be tried again (no answer, 408, 429 or 5xx).") { $0.retrying ? "1" : "0" }
        // A state set: one series per state, 1 for the one the destination is in.
        let states = statuses.map { status in
            (status.name, RelayState.of(paused: status.paused, deadSince: status.deadSince, failingSince: status.failingSince,
                                        retrying: status.retrying, now: now))
        }
        out += "# HELP attribution_relay_state How a relay destination stands: delivering, retrying, failing (for an hour or more), dead (not tried until resumed) or paused.\n# TYPE attribution_relay_state gauge\n"
        for (name, current) in states {
            for state in RelayState.allCases {
                out += "attribution_relay_state{destination=\"\(MetricSeries.label(name))\",state=\"\(state.rawValue)\"} \(state == current ? 1 : 0)\n"
            }
        }
        family("attribution_relay_failing_since_timestamp_seconds", "gauge",
               "When a relay destination began failing (no copy taken since); absent while it is not.") {
            $0.failingSince.map { String($0.millisecondsSinceEpoch / 1000) }
        }
        family("attribution_relay_replay_progress_ratio", "gauge",
               "How far a replay of a period to a relay destination has walked the log, 0 to 1; absent without one.") {
            $0.replay.map { String(format: "%.4f", $0.progress) }
        }
        family("attribution_relay_lag_seconds", "gauge",
               "How long the oldest copy a relay destination has not taken yet has waited.") { String(format: "%.3f", $0.lagSeconds) }
        family("attribution_relay_failures_in_a_row", "gauge",
               "Attempts in a row a relay destination did not take.") { String($0.failuresInARow) }
        family("attribution_relay_last_error_timestamp_seconds", "gauge",
               "When a relay destination last failed to take a copy.") { $0.lastErrorAt.map { String($0.millisecondsSinceEpoch / 1000) } }
        if let counts = RelayEgress.counts {
            out += "# HELP attribution_relay_connections_total Connections the relays made through the connect guard, each to an address it checked.\n# TYPE attribution_relay_connections_total counter\nattribution_relay_connections_total \(counts.tunnels)\n"
            out += "# HELP attribution_relay_connections_refused_total Connections the connect guard refused: an address the destination may not reach, or no relay destination's.\n# TYPE attribution_relay_connections_refused_total counter\nattribution_relay_connections_refused_total \(counts.refused)\n"
        }
        return out
    }
}
