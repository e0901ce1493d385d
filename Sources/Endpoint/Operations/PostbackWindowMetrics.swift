/// The postback ledger's window in `/metrics`: what memory holds, what the key tables hold on
/// disk, and the deliveries only the tables could tell apart.
enum PostbackWindowMetrics {
    static func prometheusText(window: PostbackWindow, rebuild: PostbackRebuild?) -> String {
        let (ledger, archive) = (window.ledger, window.archive)
        let tables = archive.tables
        var out = "# HELP attribution_postback_window_days --postback-window-days: how long a postback's key stays in memory.\n"
        out += "# TYPE attribution_postback_window_days gauge\nattribution_postback_window_days \(window.days)\n"
        out += "# HELP attribution_postback_keys_in_memory Postbacks whose duplicate key the ledger holds in memory: the window's and the days not yet sealed.\n"
        out += "# TYPE attribution_postback_keys_in_memory gauge\nattribution_postback_keys_in_memory \(ledger.keysInMemory)\n"
        out += "# HELP attribution_postback_ledger_bytes Bytes the ledger's window takes in memory (entries and index).\n"
        out += "# TYPE attribution_postback_ledger_bytes gauge\nattribution_postback_ledger_bytes \(ledger.bytesInMemory)\n"
        if let rebuild {
            out += "# HELP attribution_postback_rebuild_pending 1 while the ledger and the Apps view are read again from the log after a start (postbacks answered 503 meanwhile).\n"
            out += "# TYPE attribution_postback_rebuild_pending gauge\nattribution_postback_rebuild_pending \(rebuild.isReady ? 0 : 1)\n"
            out += "# HELP attribution_postback_rebuild_failed 1 if that read failed (a segment could not be read): postbacks stay refused until a restart.\n"
            out += "# TYPE attribution_postback_rebuild_failed gauge\nattribution_postback_rebuild_failed \(rebuild.failed ? 1 : 0)\n"
        }
        out += "# HELP attribution_postback_late_retried Postbacks past the window with retries counted since their key table was written.\n"
        out += "# TYPE attribution_postback_late_retried gauge\nattribution_postback_late_retried \(ledger.lateRetried)\n"
        out += "# HELP attribution_postback_key_tables Key tables on disk (DATA/postback-keys/), one per sealed segment past the window.\n"
        out += "# TYPE attribution_postback_key_tables gauge\nattribution_postback_key_tables \(tables.count)\n"
        out += "# HELP attribution_postback_key_table_bytes Their bytes.\n"
        out += "# TYPE attribution_postback_key_table_bytes gauge\nattribution_postback_key_table_bytes \(archive.bytes)\n"
        out += "# HELP attribution_postback_found_on_disk_total Deliveries told a retry or a conflict by a postback found in a key table, since start.\n"
        out += "# TYPE attribution_postback_found_on_disk_total counter\nattribution_postback_found_on_disk_total \(ledger.foundOnDisk)\n"
        out += "# HELP attribution_postback_key_table_errors_total Key tables that could not be read when asked: a postback answered 503 (the device sends it again), or a retry count read as none.\n"
        out += "# TYPE attribution_postback_key_table_errors_total counter\nattribution_postback_key_table_errors_total \(ledger.tableErrors)\n"
        out += "# HELP attribution_postback_key_table_failures_total Key tables that could not be written (the disk full); their postbacks stay in memory meanwhile.\n"
        out += "# TYPE attribution_postback_key_table_failures_total counter\nattribution_postback_key_table_failures_total \(window.failures)\n"
        return out
    }
}
