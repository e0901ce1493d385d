#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The common case, read without building a JSON tree: a compact body (no whitespace, no escapes)
/// holding only known keys, each once, the way WebKit writes every report.
///
/// It only ever says yes: any body it does not recognise, or that breaks any rule, returns nil and
/// goes through the general parser and validator, which also word every rejection. For the bodies
/// it accepts it must give exactly what the general path gives; the differential fuzz target in
/// `Tests/Fuzz` and `PCMReportFastPathTests` hold it to that.
struct PCMReportFastPath {
    let siteRules: SiteRules

    func read(_ body: [UInt8]) -> PCMReport? {
        body.withUnsafeBufferPointer { read($0) }
    }

    private func read(_ b: UnsafeBufferPointer<UInt8>) -> PCMReport? {
        guard b.count >= 2, b[0] == UInt8(ascii: "{"), b[b.count - 1] == UInt8(ascii: "}") else { return nil }
        var strings = [String?](repeating: nil, count: PCMReportValidator.Fields.names.count)
        var integers = [Int](repeating: -1, count: PCMReportValidator.Fields.names.count)
        var seen = 0
        var i = 1
        let end = b.count - 1
        while i < end {
            // "key"
            guard b[i] == UInt8(ascii: "\"") else { return nil }
            let keyStart = i + 1
            var j = keyStart
            while j < end && b[j] != UInt8(ascii: "\"") {
                guard b[j] >= 0x20 && b[j] < 0x7F && b[j] != UInt8(ascii: "\\") else { return nil }
                j += 1
            }
            guard j < end, let slot = Self.slot(b, keyStart..<j), seen & (1 << slot) == 0 else { return nil }
            seen |= 1 << slot
            i = j + 1
            guard i < end, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            guard i < end else { return nil }
            if b[i] == UInt8(ascii: "\"") {
                // A string value: printable ASCII, no escapes.
                let valueStart = i + 1
                var k = valueStart
                while k < end && b[k] != UInt8(ascii: "\"") {
                    guard b[k] >= 0x20 && b[k] < 0x7F && b[k] != UInt8(ascii: "\\") else { return nil }
                    k += 1
                }
                guard k < end else { return nil }
                strings[slot] = String(decoding: UnsafeBufferPointer(rebasing: b[valueStart..<k]), as: UTF8.self)
                i = k + 1
            } else {
                // An integer value: one to three digits, no leading zero.
                var k = i
                var value = 0
                while k < end, b[k] >= UInt8(ascii: "0"), b[k] <= UInt8(ascii: "9") {
                    guard k - i < 3 else { return nil }  // a long number is the general path's to refuse
                    value = value * 10 + Int(b[k] - UInt8(ascii: "0"))
                    k += 1
                }
                let digits = k - i
                guard digits >= 1, digits <= 3, !(digits > 1 && b[i] == UInt8(ascii: "0")) else { return nil }
                integers[slot] = value
                i = k
            }
            if i == end { break }
            guard b[i] == UInt8(ascii: ","), i + 1 < end else { return nil }
            i += 1
        }
        // Slots: 0 engagement, 1 source_site, 2 source_id, 3 attributed_on_site, 4 trigger_data,
        // 5 version, 6–9 tokens. Each must have the type the rules want.
        guard let engagement = strings[0], engagement == "click",
              let sourceSite = strings[1], let attributedOnSite = strings[3],
              integers[2] >= 0, integers[2] <= 255, integers[4] >= 0, integers[4] <= 15,
              integers[5] >= 1, integers[5] <= 3,
              (6...9).allSatisfy({ integers[$0] == -1 }),
              strings[2] == nil, strings[4] == nil, strings[5] == nil,
              integers[0] == -1, integers[1] == -1, integers[3] == -1,
              sourceSite != attributedOnSite,
              siteRules.checkRemembered(sourceSite) == nil, siteRules.checkRemembered(attributedOnSite) == nil,
              (strings[6] == nil) == (strings[7] == nil), (strings[8] == nil) == (strings[9] == nil),
              (6...9).allSatisfy({ strings[$0].map(Base64URL.isValidUnpadded) ?? true })
        else { return nil }
        return PCMReport(
            sourceEngagementType: engagement, sourceSite: sourceSite, sourceID: UInt8(integers[2]),
            attributedOnSite: attributedOnSite, triggerData: UInt8(integers[4]), version: integers[5],
            sourceSecretToken: strings[6], sourceSecretTokenSignature: strings[7],
            destinationSecretToken: strings[8], destinationSecretTokenSignature: strings[9])
    }

    /// The slot of a known key given as bytes (the same lengths-are-distinct rule as `Fields.slot`).
    private static func slot(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        let names = PCMReportValidator.Fields.nameBytes
        for (i, name) in names.enumerated() where name.count == range.count {
            return name.withUnsafeBufferPointer { n in
                memcmp(n.baseAddress!, b.baseAddress! + range.lowerBound, range.count) == 0 ? i : nil
            }
        }
        return nil
    }
}
