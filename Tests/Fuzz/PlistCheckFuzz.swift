// libFuzzer target over the Info.plist check (`PropertyList.read`, then `InfoPlistCheck.check`),
// built by scripts/fuzz.sh with the AppConfiguration sources: the bytes `POST /api/plist-check`
// hands to Foundation's PropertyListSerialization come from anyone with the token. Properties,
// beyond "no crash": a plist read is checked to a report whose counts match its findings, whose
// first window is `global`, and whose JSON Foundation can read back.
import Foundation
import Primitives

// A plain swiftc build has no resource bundle: the Public Suffix List is read by hand.
private let check: InfoPlistCheck = {
    let path = ProcessInfo.processInfo.environment["PSL"] ?? "Sources/Primitives/Resources/public_suffix_list.dat"
    let text = try! String(contentsOfFile: path, encoding: .utf8)
    return InfoPlistCheck(servedSites: ["app.example"], publicSuffixList: PublicSuffixList(text: text))
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlistCheck(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    guard let (list, format) = try? PropertyList.read(bytes) else { return 0 }
    let report = check.check(list, format: format)
    precondition(report.errors + report.warnings == report.findings.count, "counts that do not add up")
    precondition(report.windows.first?.scope == "global", "the first window is not global")
    precondition(report.findings.allSatisfy { !$0.rule.isEmpty && !$0.key.isEmpty }, "a finding without a rule or key")
    precondition((try? JSONSerialization.jsonObject(with: Data(report.json.utf8))) != nil, "the report's JSON does not read back")
    return 0
}
