import Primitives

/// The postback ledger's window in `/metrics`: what memory holds, what the key tables hold on
/// disk, and the deliveries only the tables could tell apart.
struct PostbackWindowMetrics: MetricsSource {
    let window: PostbackWindow
    let rebuild: PostbackRebuild?

    func prometheusText(now: Timestamp) -> String {
        let (ledger, archive) = (window.ledger, window.archive)
        var out = MetricSeries.gauge("attribution_postback_window_seconds", "--postback-window-days, in seconds: how long a postback's key stays in memory.", window.days * 86_400)
        out += MetricSeries.gauge("attribution_postback_keys_in_memory",
                                  "Postbacks whose duplicate key the ledger holds in memory: the window's and the days not yet sealed.", ledger.keysInMemory)
        out += MetricSeries.gauge("attribution_postback_ledger_bytes", "Bytes the ledger's window takes in memory (entries and index).", ledger.bytesInMemory)
        if let rebuild {
            out += MetricSeries.gauge("attribution_postback_rebuild_pending",
                                      "1 while the ledger and the Apps view are read again from the log after a start (postbacks answered 503 meanwhile).",
                                      rebuild.isReady ? 0 : 1)
            out += MetricSeries.gauge("attribution_postback_rebuild_failed",
                                      "1 if that read failed (a segment could not be read): postbacks stay refused until a restart.", rebuild.failed ? 1 : 0)
        }
        out += MetricSeries.gauge("attribution_postback_late_retried",
                                  "Postbacks past the window with retries counted since their key table was written.", ledger.lateRetried)
        out += MetricSeries.gauge("attribution_postback_key_tables",
                                  "Key tables on disk (DATA/postback-keys/), one per sealed segment past the window.", archive.tables.count)
        out += MetricSeries.gauge("attribution_postback_key_table_bytes", "Their bytes.", archive.bytes)
        out += MetricSeries.counter("attribution_postback_found_on_disk_total",
                                    "Deliveries told a retry or a conflict by a postback found in a key table, since start.", ledger.foundOnDisk)
        out += MetricSeries.counter("attribution_postback_key_table_errors_total",
                                    "Key tables that could not be read when asked: a postback answered 503 (the device sends it again), or a retry count read as none.",
                                    ledger.tableErrors)
        out += MetricSeries.counter("attribution_postback_key_table_failures_total",
                                    "Key tables that could not be written (the disk full); their postbacks stay in memory meanwhile.", window.failures)
        return out
    }
}
