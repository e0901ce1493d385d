// libFuzzer target over the postback readers: the JSON body of either protocol, and the compact
// JWS splitter inside AdAttributionKit's. Built by scripts/fuzz.sh with the rule targets'
// sources. The first byte picks the protocol. Properties, beyond "no crash":
// - a body is either refused as malformed (a 400) or read into a postback to store;
// - every reason is a snake_case word, as the export and the counters expect;
// - a postback's duplicate key names its protocol;
// - a JWS that splits has signing input equal to its first two segments as sent, and each
//   segment is the canonical base64url of the bytes it decodes to.
import Primitives

private func isReason(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }
}

private func base64URL(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
        out.append(alphabet[Int(b0 >> 2)])
        out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
        if i + 1 < bytes.count { out.append(alphabet[Int((b1 & 15) << 2 | b2 >> 6)]) }
        if i + 2 < bytes.count { out.append(alphabet[Int(b2 & 63)]) }
        i += 3
    }
    return String(decoding: out, as: UTF8.self)
}

private func checkJWS(_ text: String) {
    guard let jws = CompactJWS(text) else { return }
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    precondition(parts.count == 3, "a JWS that is not three segments split")
    precondition(jws.signingInput == Array((parts[0] + "." + parts[1]).utf8), "signing input is not the segments as sent")
    precondition(base64URL(jws.header) == parts[0] && base64URL(jws.payload) == parts[1] && base64URL(jws.signature) == parts[2],
                 "a segment is not the canonical base64url of its bytes")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPostbacks(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    checkJWS(String(decoding: bytes, as: UTF8.self))
    guard let json = try? JSONParser().parse(bytes) else { return 0 }
    if data[0] % 2 == 0 {
        switch SKAdNetworkPostback.read(json) {
        case .failure(let problem): precondition(problem.kind == .malformed, "a refusal that is not a 400")
        case .success(let p):
            precondition(p.reasons.allSatisfy(isReason), "reason not snake_case: \(p.reasons)")
            precondition(p.duplicateKey.hasPrefix("skadnetwork\u{1F}"), "duplicate key without its protocol")
            precondition(p.isCheckable == (p.knownVersion?.isSignedWithP256 ?? false))
        }
    } else {
        switch AdAttributionKitPostback.read(json) {
        case .failure(let problem): precondition(problem.kind == .malformed, "a refusal that is not a 400")
        case .success(let p):
            precondition(p.reasons.allSatisfy(isReason), "reason not snake_case: \(p.reasons)")
            precondition(p.duplicateKey.hasPrefix("adattributionkit\u{1F}"), "duplicate key without its protocol")
            if case .string(let text)? = { if case .object(let m) = json { return m.first { $0.key == "jws-string" }?.value }; return nil }() {
                checkJWS(text)
            }
        }
    }
    return 0
}
