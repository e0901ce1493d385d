import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the summary counts a stored report by, read back from its body.
///
/// A stored body was valid when it arrived, so it does not need validating again: `scan` finds
/// the four fields directly in WebKit's compact form, which is every real report, and falls back
/// to the general parser for anything else (dash-named or spaced bodies). Rebuilding the summary
/// of ten million reports at start is this, ten million times.
public struct ReportFacts: Sendable, Equatable {
    public var sourceSite: String
    public var sourceID: UInt8
    public var attributedOnSite: String
    public var triggerData: UInt8
    /// Whether the report carries a secret token (fraud prevention).
    public var hasTokens: Bool

    public init(sourceSite: String, sourceID: UInt8, attributedOnSite: String, triggerData: UInt8, hasTokens: Bool = false) {
        self.sourceSite = sourceSite
        self.sourceID = sourceID
        self.attributedOnSite = attributedOnSite
        self.triggerData = triggerData
        self.hasTokens = hasTokens
    }

    public init(_ report: PCMReport) {
        self.init(sourceSite: report.sourceSite, sourceID: report.sourceID, attributedOnSite: report.attributedOnSite,
                  triggerData: report.triggerData, hasTokens: report.sourceSecretToken != nil || report.destinationSecretToken != nil)
    }

    /// The facts of a stored body; `sites` reuses the Strings of sites seen before.
    public static func scan(_ body: [UInt8], sites: inout InternedStrings) -> ReportFacts? {
        let fast: ReportFacts?? = body.withUnsafeBufferPointer { b -> ReportFacts?? in
            // Only a flat object: a nested one (unknown fields may hold any JSON) could hold a
            // key of the same name, which the export would not count.
            guard b.count > 1, !b[1...].contains(UInt8(ascii: "{")), !b.contains(UInt8(ascii: "[")),
                  let source = string(b, #""source_site":""#, &sites), let destination = string(b, #""attributed_on_site":""#, &sites),
                  let id = integer(b, #""source_id":"#), let data = integer(b, #""trigger_data":"#) else { return .none }
            return .some(ReportFacts(sourceSite: source, sourceID: id, attributedOnSite: destination, triggerData: data,
                                     hasTokens: find(b, #"_secret_token":""#) != nil))
        }
        if let fast { return fast }
        guard case .success(let report) = PCMReportValidator(siteRules: SiteRules(developmentMode: true)).validate(body: body) else {
            return nil
        }
        return ReportFacts(report)
    }

    private static func find(_ b: UnsafeBufferPointer<UInt8>, _ key: StaticString) -> Int? {
        let n = key.utf8CodeUnitCount
        guard b.count >= n, let base = b.baseAddress else { return nil }
        let first = key.utf8Start[0]
        var i = 0
        while i <= b.count - n {
            if b[i] == first && memcmp(base + i, key.utf8Start, n) == 0 { return i + n }
            i += 1
        }
        return nil
    }

    private static func string(_ b: UnsafeBufferPointer<UInt8>, _ key: StaticString, _ sites: inout InternedStrings) -> String? {
        guard let start = find(b, key) else { return nil }
        var end = start
        while end < b.count && b[end] != UInt8(ascii: "\"") {
            if b[end] == UInt8(ascii: "\\") { return nil }
            end += 1
        }
        guard end < b.count else { return nil }
        return sites.string(UnsafeBufferPointer(rebasing: b[start..<end]))
    }

    private static func integer(_ b: UnsafeBufferPointer<UInt8>, _ key: StaticString) -> UInt8? {
        guard let start = find(b, key) else { return nil }
        var value = 0, i = start
        while i < b.count, b[i] >= 48, b[i] <= 57, i - start < 3 {
            value = value * 10 + Int(b[i] - 48)
            i += 1
        }
        guard i > start, value <= 255 else { return nil }
        return UInt8(value)
    }
}
