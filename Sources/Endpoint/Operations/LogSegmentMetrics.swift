import Primitives
import ReportStore

/// The log's segments in `/metrics`: what each takes on disk, which days it holds, the oldest
/// record kept and what retention removed.
enum LogSegmentMetrics {
    static func prometheusText(store: ReportStore, retention: LogRetention?) -> String {
        let segments = store.segments
        func day(_ time: Timestamp?) -> String { time.map { String($0.rfc3339.prefix(10)) } ?? "" }
        var out = "# HELP attribution_log_segment_bytes Bytes of each kept log segment (the active one without the zeros kept ahead of it), by its first log offset and the UTC days of its first and last record.\n"
        out += "# TYPE attribution_log_segment_bytes gauge\n"
        for segment in segments {
            out += "attribution_log_segment_bytes{segment=\"\(segment.base)\",first_day=\"\(day(segment.firstTime))\",last_day=\"\(day(segment.lastTime))\",state=\"\(segment.sealed ? "sealed" : "active")\"} \(segment.bytes)\n"
        }
        out += "# HELP attribution_log_segment_records Records in each kept log segment.\n# TYPE attribution_log_segment_records gauge\n"
        for segment in segments {
            out += "attribution_log_segment_records{segment=\"\(segment.base)\"} \(segment.records)\n"
        }
        out += "# HELP attribution_log_oldest_record_timestamp_seconds Receive time of the oldest record kept (Unix seconds; 0 in an empty log): exports reach back to it, the summary further.\n"
        out += "# TYPE attribution_log_oldest_record_timestamp_seconds gauge\n"
        out += "attribution_log_oldest_record_timestamp_seconds \(store.oldestRecordTime.map { $0.millisecondsSinceEpoch / 1000 } ?? 0)\n"
        out += "# HELP attribution_log_retention_days --retention-days (0: everything is kept).\n# TYPE attribution_log_retention_days gauge\n"
        out += "attribution_log_retention_days \(retention?.days ?? 0)\n"
        let removed = retention?.removed ?? (segments: 0, bytes: 0)
        out += "# HELP attribution_log_segments_removed_total Sealed log segments removed by retention since start.\n"
        out += "# TYPE attribution_log_segments_removed_total counter\n"
        out += "attribution_log_segments_removed_total \(removed.segments)\n"
        out += "# HELP attribution_log_removed_bytes_total Their bytes.\n# TYPE attribution_log_removed_bytes_total counter\n"
        out += "attribution_log_removed_bytes_total \(removed.bytes)\n"
        return out
    }
}
