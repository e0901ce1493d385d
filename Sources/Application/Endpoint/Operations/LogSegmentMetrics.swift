import Primitives
import RecordLog

/// The log's segments in `/metrics`: what each takes on disk, which days it holds, the oldest
/// record kept and what retention removed.
struct LogSegmentMetrics: MetricsSource {
    let store: RecordLog
    let retention: LogRetention?
    var digests: SegmentDigests? = nil

    func prometheusText(now: Timestamp) -> String {
        let segments = store.segments
        func day(_ time: Timestamp?) -> String { time.map { String($0.rfc3339.prefix(10)) } ?? "" }
        var out = "# HELP attribution_log_bytes Bytes of the log's kept segments on disk (the active one without the zeros kept ahead of it).\n"
        out += "# TYPE attribution_log_bytes gauge\nattribution_log_bytes \(segments.reduce(0) { $0 + $1.bytes })\n"
        out += "# HELP attribution_log_segment_bytes Bytes of each kept log segment, by its first log offset and the UTC day of its first record.\n"
        out += "# TYPE attribution_log_segment_bytes gauge\n"
        for segment in segments {
            out += "attribution_log_segment_bytes{segment=\"\(segment.base)\",first_day=\"\(day(segment.firstTime))\",state=\"\(segment.sealed ? "sealed" : "active")\"} \(segment.bytes)\n"
        }
        out += "# HELP attribution_log_segment_records Records in each kept log segment.\n# TYPE attribution_log_segment_records gauge\n"
        for segment in segments {
            out += "attribution_log_segment_records{segment=\"\(segment.base)\"} \(segment.records)\n"
        }
        out += "# HELP attribution_log_oldest_record_timestamp_seconds Receive time of the oldest record kept (Unix seconds; 0 in an empty log): exports reach back to it, the summary further.\n"
        out += "# TYPE attribution_log_oldest_record_timestamp_seconds gauge\n"
        out += "attribution_log_oldest_record_timestamp_seconds \(store.oldestRecordTime.map { $0.millisecondsSinceEpoch / 1000 } ?? 0)\n"
        out += MetricSeries.gauge("attribution_log_retention_seconds", "--retention-days, in seconds (0: everything is kept).", (retention?.days ?? 0) * 86_400)
        let removed = retention?.removed ?? (segments: 0, bytes: 0)
        out += MetricSeries.counter("attribution_log_segments_removed_total", "Sealed log segments removed by retention since start.", removed.segments)
        out += MetricSeries.counter("attribution_log_removed_bytes_total", "Their bytes.", removed.bytes)
        out += MetricSeries.gauge("attribution_log_retention_waiting_segments",
                                  "Sealed segments old enough to go that retention keeps: not yet in the summary's checkpoint, not yet exported (a paused export holds them all), or being read.",
                                  retention?.waiting ?? 0)
        out += MetricSeries.counter("attribution_log_roll_failures_total",
                                    "Times the active segment could not be sealed (the disk full, log/ unwritable); it takes records meanwhile and grows.",
                                    store.rollFailures.count)
        if let digests {
            out += MetricSeries.gauge("attribution_segment_digests",
                                      "Sealed segments with a digest: what the next start takes instead of reading them.", digests.count)
            out += MetricSeries.counter("attribution_segment_digest_failures_total",
                                        "Digests that could not be written (the disk full); their segments are read at the next start.", digests.failures)
        }
        return out
    }
}
