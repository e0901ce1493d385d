#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Primitives

/// The data directory's file system in `/metrics`, named as node_exporter names its own
/// (`node_filesystem_avail_bytes`, `node_filesystem_size_bytes`), so that an alert can say the
/// disk is filling up before the endpoint answers 503 `disk_full`. One `statvfs` a scrape.
struct DataDiskMetrics: MetricsSource {
    let dataDirectory: String

    func prometheusText(now: Timestamp) -> String {
        var fs = statvfs()
        guard statvfs(dataDirectory, &fs) == 0 else { return "" }
        let blockSize = Int(fs.f_frsize)
        // The space an unprivileged process may still write: what the endpoint has.
        let available = Int(fs.f_bavail).multipliedReportingOverflow(by: blockSize)
        let size = Int(fs.f_blocks).multipliedReportingOverflow(by: blockSize)
        return MetricSeries.gauge("attribution_data_filesystem_avail_bytes", "Bytes the endpoint may still write on the data directory's file system.",
                                  available.overflow ? .max : available.partialValue)
            + MetricSeries.gauge("attribution_data_filesystem_size_bytes", "Size of the data directory's file system in bytes.",
                                 size.overflow ? .max : size.partialValue)
    }
}
