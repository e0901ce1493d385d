import ClickHouseExport
import Primitives

/// How the ClickHouse export stands, as `/metrics` and `/healthz` show it.
extension ClickHouseExporter.Status {
    func prometheusText() -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples { out += "\(name)\(sample.labels) \(sample.value)\n" }
        }
        func byTable(_ value: (ClickHouseExporter.TableStatus) -> String) -> [(labels: String, value: String)] {
            tables.map { ("{table=\"\($0.table)\"}", value($0)) }
        }
        family("attribution_export_rows_total", "counter", "Rows ClickHouse accepted, by table (from the cursor: a resent batch counts once).",
               byTable { String($0.exportedRows) })
        family("attribution_export_lag_records", "gauge", "Records in the log not yet in ClickHouse, by table.",
               byTable { String($0.lagRecords) })
        family("attribution_export_lag_seconds", "gauge", "Age of the oldest record not yet in ClickHouse, by table (0 when none).",
               byTable { String(format: "%.3f", $0.lagSeconds) })
        family("attribution_export_unreadable_records_total", "counter", "Records the export could not read, by table: logged, never sent.",
               byTable { String($0.unreadable) })
        family("attribution_export_paused", "gauge", "1 while ClickHouse refuses a table's rows; the reason is in attribution_export_paused_info and the log.",
               byTable { $0.paused == nil ? "0" : "1" })
        // Declared even with no table paused, so that a rule or dashboard naming it finds it.
        let paused = tables.compactMap { table in table.paused.map { (table.table, $0) } }
        family("attribution_export_paused_info", "gauge", "Why a table's export stopped.",
               paused.map { ("{table=\"\($0.0)\",reason=\"\(MetricSeries.label($0.1))\"}", "1") })
        family("attribution_export_batches_total", "counter", "Batches ClickHouse accepted since start.", [("", String(batches))])
        family("attribution_export_failures_total", "counter", "Failed statements since start (unanswered, refused, or a server error).",
               [("", String(failures))])
        family("attribution_export_failures_in_a_row", "gauge", "Failures since the last accepted batch: the retry backoff's step.",
               [("", String(failuresInARow))])
        if let lastError {
            family("attribution_export_last_error_info", "gauge", "The export's last error, and when (seconds since the epoch).",
                   [("{error=\"\(MetricSeries.label(lastError))\"}", String(Double(lastErrorAt?.millisecondsSinceEpoch ?? 0) / 1000))])
        }
        return out
    }

    /// `/healthz`'s `"export"`: the node stays healthy (200) while the export is behind.
    var healthJSON: JSONValue {
        var members = [
            JSONMember(key: "clickhouse", value: .string(target)),
            JSONMember(key: "state", value: .string(stopped != nil ? "stopped" : tables.contains { $0.paused != nil } ? "paused"
                                                    : lagRecords > 0 ? "behind" : "current")),
            JSONMember(key: "lag_records", value: .number(String(lagRecords))),
            JSONMember(key: "lag_seconds", value: .number(String(format: "%.3f", lagSeconds))),
        ]
        if let lastError { members.append(JSONMember(key: "last_error", value: .string(lastError))) }
        if let stopped { members.append(JSONMember(key: "stopped", value: .string(stopped))) }
        return .object(members)
    }
}

/// The ClickHouse export's series in `/metrics`.
struct ClickHouseExportMetrics: MetricsSource {
    let exporter: ClickHouseExporter

    func prometheusText(now: Timestamp) -> String { exporter.status.prometheusText() }
}
