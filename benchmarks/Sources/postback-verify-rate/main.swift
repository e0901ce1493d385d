// Postback signature checks per second on one core, through the endpoint's own code: the rate
// postback ingest is measured against (benchmarks/postbacks.py).
//
// Usage: postback-verify-rate SECONDS BODY-FILE [TEST-KEY-SPKI]
// BODY-FILE holds one postback per line. Prints one JSON line: the first line's signature checked
// over and over (`verify_per_second`), up to 4096 distinct ones in turn
// (`verify_distinct_per_second`, the endpoint's case), and the first read and checked.
import Foundation
import Postbacks
import Primitives

let arguments = CommandLine.arguments
guard arguments.count >= 3, let seconds = Double(arguments[1]), let body = FileManager.default.contents(atPath: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: postback-verify-rate SECONDS BODY-FILE [TEST-KEY-SPKI]\n".utf8))
    exit(64)
}
let keys = arguments.count > 3 ? [(name: "bench", subjectPublicKeyInfo: arguments[3])] : []
let keyring = try PostbackKeyring(testKeys: keys)
// One body per line; the first is the one checked over and over.
let lines = body.split(separator: UInt8(ascii: "\n")).map { Array($0) }
let bytes = lines.first ?? []
guard case .success(let postback) = Postback.parse(bytes).flatMap({ Postback.read(.skadnetwork, json: $0) }) else { exit(65) }
let outcome = keyring.check(postback).outcome
guard outcome == .apple || outcome == .testKey else {
    FileHandle.standardError.write(Data("the body's signature does not verify (\(outcome.name))\n".utf8))
    exit(65)
}

/// Runs `work` in batches until `seconds` have passed; returns calls per second.
func rate(_ work: () -> Void) -> Double {
    let start = Date()
    var calls = 0
    while Date().timeIntervalSince(start) < seconds {
        for _ in 0..<100 { work() }
        calls += 100
    }
    return Double(calls) / Date().timeIntervalSince(start)
}

var sink = 0
let verify = rate { if keyring.check(postback).outcome == outcome { sink += 1 } }
// The endpoint checks a different signature every time; so does this, when the file holds many.
let many: [Postback] = lines.prefix(4096).compactMap {
    if case .success(let p) = Postback.parse($0).flatMap({ Postback.read(.skadnetwork, json: $0) }) { return p } else { return nil }
}
var next = 0
let verifyDistinct = rate {
    if keyring.check(many[next]).outcome == outcome { sink += 1 }
    next = next + 1 == many.count ? 0 : next + 1
}
let readAndVerify = rate {
    if case .success(let p) = Postback.parse(bytes).flatMap({ Postback.read(.skadnetwork, json: $0) }), keyring.check(p).outcome == outcome { sink += 1 }
}
print("{\"verify_per_second\":\(Int(verify)),\"distinct\":\(many.count),\"verify_distinct_per_second\":\(Int(verifyDistinct)),\"read_and_verify_per_second\":\(Int(readAndVerify)),\"checks\":\(sink)}")
