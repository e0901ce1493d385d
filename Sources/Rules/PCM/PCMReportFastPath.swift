import Primitives

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
    let sites: any SiteChecking

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
        guard Self.scanMembers(b, into: values) else { return nil }
        return report(b, values)
    }

    /// Reads `"key":value` pairs between the braces into their slots; false for anything else.
    private static func scanMembers(_ b: UnsafeBufferPointer<UInt8>, into values: UnsafeMutableBufferPointer<Value>) -> Bool {
        var seen = 0
        var i = 1
        let end = b.count - 1
        while i < end {
            // "key"
            guard b[i] == UInt8(ascii: "\"") else { return false }
            let keyStart = i + 1
            guard let keyEnd = plainStringEnd(b, from: keyStart, before: end),
                  let slot = slot(b, keyStart..<keyEnd), seen & (1 << slot) == 0 else { return false }
            seen |= 1 << slot
            i = keyEnd + 1
            guard i < end, b[i] == UInt8(ascii: ":") else { return false }
            i += 1
            guard i < end, let (value, next) = scanValue(b, at: i, before: end) else { return false }
            values[slot] = value
            i = next
            if i == end { break }
            guard b[i] == UInt8(ascii: ","), i + 1 < end else { return false }
            i += 1
        }
        return true
    }

    /// A string value (printable ASCII, no escapes) or an integer (one to three digits, no leading
    /// zero) at `i`, and where the next byte is.
    private static func scanValue(_ b: UnsafeBufferPointer<UInt8>, at i: Int, before end: Int) -> (Value, Int)? {
        if b[i] == UInt8(ascii: "\"") {
            guard let close = plainStringEnd(b, from: i + 1, before: end) else { return nil }
            return (.string((i + 1)..<close), close + 1)
        }
        var k = i
        var value = 0
        while k < end, b[k] >= UInt8(ascii: "0"), b[k] <= UInt8(ascii: "9") {
            guard k - i < 3 else { return nil }  // a long number is the general path's to refuse
            value = value * 10 + Int(b[k] - UInt8(ascii: "0"))
            k += 1
        }
        let digits = k - i
        guard digits >= 1, digits <= 3, !(digits > 1 && b[i] == UInt8(ascii: "0")) else { return nil }
        return (.integer(value), k)
    }

    /// The closing quote of a string of printable ASCII without escapes that starts at `start`.
    private static func plainStringEnd(_ b: UnsafeBufferPointer<UInt8>, from start: Int, before end: Int) -> Int? {
        var k = start
        while k < end && b[k] != UInt8(ascii: "\"") {
            guard b[k] >= 0x20 && b[k] < 0x7F && b[k] != UInt8(ascii: "\\") else { return nil }
            k += 1
        }
        return k < end ? k : nil
    }

    /// The report the slots hold, if each has the type and range the rules want.
    private func report(_ b: UnsafeBufferPointer<UInt8>, _ values: UnsafeMutableBufferPointer<Value>) -> PCMReport? {
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
        // 5 version, 6–9 tokens.
        guard case .string(let engagementRange) = values[0], engagementRange.count == 5,
              memcmp(b.baseAddress! + engagementRange.lowerBound, "click", 5) == 0,
              let sourceSite = string(1), let attributedOnSite = string(3),
              let sourceID = integer(2, in: 0...255), let triggerData = integer(4, in: 0...15),
              let version = integer(5, in: 1...3),
              let sourceToken = optionalString(6), let sourceSignature = optionalString(7),
              let destinationToken = optionalString(8), let destinationSignature = optionalString(9),
              sourceSite != attributedOnSite,
              sites.check(sourceSite) == nil, sites.check(attributedOnSite) == nil,
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
