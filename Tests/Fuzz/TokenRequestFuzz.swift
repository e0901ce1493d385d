// libFuzzer target over the sign-unlinkable-token request reader (`UnlinkableTokenRequest.read`),
// built by scripts/fuzz.sh with the PCM rule target's sources. Properties, beyond "no crash":
// - a refusal names a snake_case rule, and its field (if any) is one of the request's own, or,
//   for `duplicate_key`, the key the body gives twice;
// - a request read has a 16-byte nonce and a 512-byte blinded message, and its side is the one
//   whose fields the body has.
import Primitives

private let fields: Set<String> = ["version", "source_engagement_type", "source_nonce", "source_unlinkable_token",
                                   "destination_nonce", "destination_unlinkable_token"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenRequest(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: count))
    switch UnlinkableTokenRequest.read(body) {
    case .failure(let problem):
        // Digits too: `invalid_utf8`.
        precondition(!problem.rule.isEmpty && problem.rule.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 },
                     "a rule that is not snake_case: \(problem.rule)")
        if let field = problem.field, problem.rule != "duplicate_key" {
            precondition(fields.contains(field), "a refusal names an unknown field: \(field)")
        }
    case .success(let request):
        precondition(request.nonce.count == UnlinkableTokenRequest.nonceBytes, "a nonce of \(request.nonce.count) bytes was read")
        precondition(request.blindedMessage.count == UnlinkableTokenRequest.blindedMessageBytes, "a blinded message of the wrong size was read")
        let text = String(decoding: body, as: UTF8.self)
        precondition(text.contains("\(request.side.rawValue)_nonce"), "the side read is not the body's")
    }
    return 0
}
