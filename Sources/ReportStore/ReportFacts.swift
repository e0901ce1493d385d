import AttributionCore

/// What the summary counts a report by, stored with it so that the summary can be rebuilt from
/// the log at start without parsing ten million JSON bodies.
public struct ReportFacts: Sendable, Equatable {
    public var sourceSite: String
    public var sourceID: UInt8
    public var attributedOnSite: String
    public var triggerData: UInt8
    /// When the matched trigger was recorded (destination copies), for the delay distribution.
    public var triggerRecordedAt: Timestamp?
    /// Whether the report carries a secret token (fraud prevention).
    public var hasTokens: Bool

    public init(sourceSite: String, sourceID: UInt8, attributedOnSite: String, triggerData: UInt8,
                triggerRecordedAt: Timestamp? = nil, hasTokens: Bool = false) {
        self.sourceSite = sourceSite
        self.sourceID = sourceID
        self.attributedOnSite = attributedOnSite
        self.triggerData = triggerData
        self.triggerRecordedAt = triggerRecordedAt
        self.hasTokens = hasTokens
    }

    public init(_ report: PCMReport, triggerRecordedAt: Timestamp? = nil) {
        self.init(sourceSite: report.sourceSite, sourceID: report.sourceID, attributedOnSite: report.attributedOnSite,
                  triggerData: report.triggerData, triggerRecordedAt: triggerRecordedAt,
                  hasTokens: report.sourceSecretToken != nil || report.destinationSecretToken != nil)
    }

    /// Tag 3 of a report payload: u8 source id, u8 trigger data, u8 flags (1 = has tokens,
    /// 2 = trigger time follows), [i64 trigger time], u8 length + source site, u8 length +
    /// attributed-on site.
    func encode(into out: inout [UInt8]) {
        out.append(3)
        out.append(sourceID)
        out.append(triggerData)
        out.append((hasTokens ? 1 : 0) | (triggerRecordedAt != nil ? 2 : 0))
        if let t = triggerRecordedAt { out.appendLE(t.millisecondsSinceEpoch) }
        for site in [sourceSite, attributedOnSite] {
            let bytes = site.utf8.prefix(255)
            out.append(UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
    }

    /// Reads tag 3's fields at `offset` (just after the tag); nil if they do not fit.
    static func decode(_ p: UnsafeRawBufferPointer, at start: Int, strings: inout StringCache) -> (ReportFacts, end: Int)? {
        var offset = start
        guard offset + 3 <= p.count else { return nil }
        let sourceID = p[offset], triggerData = p[offset + 1], flags = p[offset + 2]
        offset += 3
        var triggerTime: Timestamp?
        if flags & 2 != 0 {
            guard offset + 8 <= p.count else { return nil }
            triggerTime = Timestamp(millisecondsSinceEpoch: p.loadLE(Int64.self, at: offset))
            offset += 8
        }
        var sites: [String] = []
        for _ in 0..<2 {
            guard offset < p.count, offset + 1 + Int(p[offset]) <= p.count else { return nil }
            let length = Int(p[offset])
            sites.append(strings.string(UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)])))
            offset += 1 + length
        }
        return (ReportFacts(sourceSite: sites[0], sourceID: sourceID, attributedOnSite: sites[1], triggerData: triggerData,
                            triggerRecordedAt: triggerTime, hasTokens: flags & 1 != 0), offset)
    }
}

/// Turns bytes into Strings, reusing the String for bytes seen before: a log holds the same few
/// sites and reasons millions of times.
struct StringCache {
    private var entries: [(bytes: [UInt8], string: String)] = []

    mutating func string(_ bytes: UnsafeRawBufferPointer) -> String {
        for entry in entries where entry.bytes.count == bytes.count && entry.bytes.elementsEqual(bytes) {
            return entry.string
        }
        let string = String(decoding: bytes, as: UTF8.self)
        if entries.count < 64 { entries.append((Array(bytes), string)) }
        return string
    }
}
