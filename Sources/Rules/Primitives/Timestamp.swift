/// A point in time as milliseconds since the Unix epoch, UTC: the unit the log stores.
///
/// Formatting and parsing RFC 3339 by hand keeps the export path free of DateFormatter, which
/// is slow and not thread-safe to share.
public struct Timestamp: Sendable, Hashable, Comparable {
    public var millisecondsSinceEpoch: Int64

    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.millisecondsSinceEpoch < b.millisecondsSinceEpoch }

    /// `2026-11-20T10:00:00.000Z`
    public var rfc3339: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendRFC3339(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `2026-11-20T10:00:00.000Z`. This runs for every acknowledgement and every exported
    /// line, so the 24 bytes are written into a stack buffer and appended in one copy: appending
    /// them one by one cost more than the date arithmetic.
    public func appendRFC3339(to out: inout [UInt8]) {
        let ms = millisecondsSinceEpoch
        let days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let msOfDay = ms - days * 86_400_000
        let (y, m, d) = Self.civil(fromDays: days)
        let secondOfDay = msOfDay / 1000
        let hour = secondOfDay / 3600, minute = secondOfDay / 60 % 60, second = secondOfDay % 60, milli = msOfDay % 1000
        func digit(_ v: Int64) -> UInt8 { UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10) }
        // Years past 9999 keep their last four digits, as they always have here.
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { t in
            t[0] = digit(y / 1000); t[1] = digit(y / 100); t[2] = digit(y / 10); t[3] = digit(y); t[4] = UInt8(ascii: "-")
            t[5] = digit(m / 10); t[6] = digit(m); t[7] = UInt8(ascii: "-")
            t[8] = digit(d / 10); t[9] = digit(d); t[10] = UInt8(ascii: "T")
            t[11] = digit(hour / 10); t[12] = digit(hour); t[13] = UInt8(ascii: ":")
            t[14] = digit(minute / 10); t[15] = digit(minute); t[16] = UInt8(ascii: ":")
            t[17] = digit(second / 10); t[18] = digit(second); t[19] = UInt8(ascii: ".")
            t[20] = digit(milli / 100); t[21] = digit(milli / 10); t[22] = digit(milli); t[23] = UInt8(ascii: "Z")
            out.append(contentsOf: UnsafeBufferPointer(t.bindMemory(to: UInt8.self)))
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`, `z` and a space separator are
    /// accepted as RFC 3339 allows. Fractions beyond milliseconds are truncated.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in start..<start + count {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == UInt8(ascii: "-"), let mo = num(5, 2), b[7] == UInt8(ascii: "-"),
              let d = num(8, 2), [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
              let h = num(11, 2), b[13] == UInt8(ascii: ":"), let mi = num(14, 2), b[16] == UInt8(ascii: ":"),
              let s = num(17, 2),
              (1...12).contains(mo), d >= 1, d <= Self.daysInMonth(year: y, month: mo), h <= 23, mi <= 59, s <= 60
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { millis = millis * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        var offsetMinutes: Int64 = 0
        guard i < b.count else { return nil }
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let oh = num(i + 1, 2), b.count > i + 3, b[i + 3] == UInt8(ascii: ":"), let om = num(i + 4, 2),
                  oh <= 23, om <= 59 else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: y, mo, d)
        let seconds = days * 86_400 + h * 3600 + mi * 60 + min(s, 59) - offsetMinutes * 60
        // An offset can carry 0000-01-01 or 9999-12-31 past the four-digit years: such a time
        // could be stored, and never read back.
        guard Self.representable.contains(seconds * 1000 + millis) else { return nil }
        self.millisecondsSinceEpoch = seconds * 1000 + millis
    }

    /// The times RFC 3339 can write in UTC: 0000-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z.
    public static let representable: ClosedRange<Int64> =
        days(fromCivil: 0, 1, 1) * 86_400_000...days(fromCivil: 9999, 12, 31) * 86_400_000 + 86_399_999

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

/// As an RFC 3339 string, the way every API of the endpoint writes times.
extension Timestamp: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let t = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 time: \(text)"))
        }
        self = t
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }

    public func adding(milliseconds: Int64) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: millisecondsSinceEpoch + milliseconds)
    }

    /// Its UTC day, days since 1970-01-01: what per-day counts are keyed by. Clamped: a time
    /// millions of years away (only a damaged or forged log holds one) is the first or last day,
    /// never a trap.
    public var day: Int32 {
        let ms = millisecondsSinceEpoch, length: Int64 = 86_400_000
        return Int32(clamping: ms >= 0 ? ms / length : (ms / length) - (ms % length == 0 ? 0 : 1))
    }
}
