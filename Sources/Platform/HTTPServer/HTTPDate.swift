#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock text for the `Date` header and the access log, computed at most once a second.
struct HTTPDate {
    /// The second the cached text is for (Unix time).
    private(set) var second: Int = -1
    private(set) var imfFixdate = ""
    /// `2026-11-20T10:00:00` for the current second; log lines add the milliseconds.
    private(set) var rfc3339Second: [UInt8] = []

    /// Refreshes the cached text if the second has changed.
    mutating func update() {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let now = Int(ts.tv_sec)
        guard now != second else { return }
        second = now
        var t = time_t(now)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        imfFixdate = "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        rfc3339Second = Array("\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))".utf8)
    }

    /// Appends `2026-11-20T10:00:00.123Z` for now. Call `update()` first in the same loop turn.
    func appendRFC3339Now(to out: inout [UInt8]) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        guard Int(ts.tv_sec) == second else {
            out.append(contentsOf: HTTPDate.rfc3339Now().utf8)  // the second turned since update()
            return
        }
        let ms = Int(ts.tv_nsec) / 1_000_000
        out.append(contentsOf: rfc3339Second)
        out.append(UInt8(ascii: "."))
        out.append(UInt8(ascii: "0") + UInt8(ms / 100))
        out.append(UInt8(ascii: "0") + UInt8(ms / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(ms % 10))
        out.append(UInt8(ascii: "Z"))
    }

    /// `2026-11-20T10:00:00.123Z`, for log lines.
    static func rfc3339Now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var parts = tm()
        gmtime_r(&t, &parts)
        let ms = Int(ts.tv_nsec) / 1_000_000
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)Z"
    }
}

private func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
