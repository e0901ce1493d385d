// PCM token work per second on one core, through the endpoint's own wrappers of swift-crypto:
// blind signatures (the server's `s = m^d mod n`, RSA-4096) and token-signature checks
// (RSASSA-PSS-SHA384, what a report with a token costs). The yardsticks of benchmarks/tokens.py.
//
// Usage: token-sign-rate SECONDS
// Prints one JSON line: {"sign_per_second":…,"verify_per_second":…}
import Foundation
import Signatures

let arguments = CommandLine.arguments
guard arguments.count >= 2, let seconds = Double(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: token-sign-rate SECONDS\n".utf8))
    exit(64)
}
let key = try TokenSigningKey.generate()
let token = (0..<32).map { UInt8($0) }
let blinding = try key.publicKey.blind(token: token)
guard let blindSignature = key.blindSignature(for: blinding.blindedMessage),
      let signature = blinding.finalize(blindSignature: blindSignature), key.publicKey.isValidSignature(signature, for: token) else {
    FileHandle.standardError.write(Data("the round trip does not verify\n".utf8))
    exit(65)
}

/// Runs `work` until `seconds` have passed; returns calls per second.
func rate(batch: Int, _ work: () -> Void) -> Double {
    let start = Date()
    var calls = 0
    while Date().timeIntervalSince(start) < seconds {
        for _ in 0..<batch { work() }
        calls += batch
    }
    return Double(calls) / Date().timeIntervalSince(start)
}

var sink = 0
let sign = rate(batch: 4) { if key.blindSignature(for: blinding.blindedMessage) != nil { sink += 1 } }
let verify = rate(batch: 100) { if key.publicKey.isValidSignature(signature, for: token) { sink += 1 } }
print("{\"sign_per_second\":\(String(format: "%.1f", sign)),\"verify_per_second\":\(Int(verify)),\"calls\":\(sink)}")
