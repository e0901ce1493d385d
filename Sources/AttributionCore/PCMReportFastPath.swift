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
        let slots = PCMReportValidator.Fields.names.count
        // Per slot, on the stack: an integer value, or the byte range of a string value. Strings
        // are made only for the fields a report keeps.
        return withUnsafeTemporaryAllocation(of: Value.self, capacity: slots) { values in
            values.initialize(repeating: .absent)
            return read(b, into: values)
        }
    }

    private enum Value { case absent, integer(Int), string(Range<Int>) }

    private func read(_ b: UnsafeBufferPointer<UInt8>, into values: UnsafeMutableBufferPointer<Value>) -> PCMReport? {
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
                values[slot] = .string(valueStart..<k)
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
                values[slot] = .integer(value)
                i = k
            }
            if i == end { break }
            guard b[i] == UInt8(ascii: ","), i + 1 < end else { return nil }
            i += 1
        }
        func integer(_ slot: Int, in range: ClosedRange<Int>) -> Int? {
            if case .integer(let v) = values[slot], range.contains(v) { return v }
            return nil
        }
        func string(_ slot: Int) -> String? {
            if case .string(let r) = values[slot] { return String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self) }
            return nil
        }
        /// Absent, or a string (for the optional token fields).
        func optionalString(_ slot: Int) -> String?? {
            switch values[slot] {
            case .absent: return .some(nil)
            case .string: return .some(string(slot))
            case .integer: return nil
            }
        }
        // Slots: 0 engagement, 1 source_site, 2 source_id, 3 attributed_on_site, 4 trigger_data,
        // 5 version, 6–9 tokens. Each must have the type the rules want.
        guard case .string(let engagementRange) = values[0], engagementRange.count == 5,
              memcmp(b.baseAddress! + engagementRange.lowerBound, "click", 5) == 0,
              let sourceSite = string(1), let attributedOnSite = string(3),
              let sourceID = integer(2, in: 0...255), let triggerData = integer(4, in: 0...15),
              let version = integer(5, in: 1...3),
              let sourceToken = optionalString(6), let sourceSignature = optionalString(7),
              let destinationToken = optionalString(8), let destinationSignature = optionalString(9),
              sourceSite != attributedOnSite,
              siteRules.checkRemembered(sourceSite) == nil, siteRules.checkRemembered(attributedOnSite) == nil,
              (sourceToken == nil) == (sourceSignature == nil), (destinationToken == nil) == (destinationSignature == nil),
              Self.isToken(sourceToken), Self.isToken(sourceSignature),
              Self.isToken(destinationToken), Self.isToken(destinationSignature)
        else { return nil }
        return PCMReport(
            sourceEngagementType: "click", sourceSite: sourceSite, sourceID: UInt8(sourceID),
            attributedOnSite: attributedOnSite, triggerData: UInt8(triggerData), version: version,
            sourceSecretToken: sourceToken, sourceSecretTokenSignature: sourceSignature,
            destinationSecretToken: destinationToken, destinationSecretTokenSignature: destinationSignature)
    }

    private static func isToken(_ value: String?) -> Bool {
        value.map(Base64URL.isValidUnpadded) ?? true
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
