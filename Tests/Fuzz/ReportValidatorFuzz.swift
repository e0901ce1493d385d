// libFuzzer target over the JSON parser and PCMReportValidator. Built by scripts/fuzz.sh.
// Properties: no crash; the fast path agrees with the general path; an accepted report's fields
// are in range; any parsed JSON value survives serialize → parse unchanged.
import Foundation
import Primitives

private let validator: PCMReportValidator = {
    let path = ProcessInfo.processInfo.environment["PSL"] ?? "Sources/Primitives/Resources/public_suffix_list.dat"
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "com\nexample\nco.uk\n"
    return PCMReportValidator(siteRules: SiteRules(publicSuffixList: PublicSuffixList(text: text), developmentMode: false))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReportValidator(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    // The fast path may accept only what the general path accepts, with the same result.
    if let fast = PCMReportFastPath(sites: validator.siteRules).read(bytes) {
        precondition(validator.validateGeneral(body: bytes) == .success(fast), "fast path disagrees")
    }
    if case .success(let report) = validator.validate(body: bytes) {
        precondition(report.triggerData <= 15 && (1...3).contains(report.version), "out-of-range report accepted")
        precondition(report.sourceSite != report.attributedOnSite, "same-site report accepted")
    }
    if let value = try? JSONParser(maxDepth: 16).parse(bytes) {
        let again = try? JSONParser(maxDepth: 16).parse(Array(value.serialized().utf8))
        precondition(again == value, "serialize/parse round trip changed the value")
    }
    return 0
}
