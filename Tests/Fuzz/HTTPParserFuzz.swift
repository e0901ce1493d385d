// libFuzzer target over HTTPRequestParser. Built by scripts/fuzz.sh with the parser's sources:
//   swiftc -sanitize=fuzzer,address -parse-as-library ...
// Properties checked on every input, beyond "no crash":
// - a body never exceeds the limit;
// - feeding the bytes whole or in pieces gives the same requests, and an error in one way of
//   feeding is an error in the other (which error may differ: a head that breaks two rules can be
//   caught by either first, depending on how much of it has arrived).

private func run(_ bytes: [UInt8], pieces: Int) -> ([String], Int?) {
    var limits = HTTPLimits()
    limits.maxBodyBytes = 4096
    limits.maxHeadBytes = 2048
    limits.maxRequestLineBytes = 1024
    var parser = HTTPRequestParser(limits: limits)
    var buffer: [UInt8] = []
    var start = 0
    var seen: [String] = []
    let size = max(1, bytes.count / max(pieces, 1))
    var offset = 0
    while offset < bytes.count {
        buffer.append(contentsOf: bytes[offset..<min(bytes.count, offset + size)])
        offset += size
        while true {
            do {
                switch try parser.next(buffer, start: &start) {
                case .needMore: break
                case .expectContinue: seen.append("100"); continue
                case .request(let r):
                    precondition(r.body.count <= limits.maxBodyBytes, "body over the limit")
                    seen.append("\(r.method) \(r.target) \(r.body.count) \(r.headers.fields.count)")
                    continue
                }
            } catch {
                return (seen, error.status)
            }
            break
        }
    }
    return (seen, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let pieces = Int(data[0] % 16) + 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    let whole = run(bytes, pieces: 1)
    let split = run(bytes, pieces: pieces)
    // The error is found on the same request either way; "100" may be seen in one and not the
    // other only when the error came first, so compare the requests that completed.
    precondition(whole.0.filter { $0 != "100" } == split.0.filter { $0 != "100" }, "split changed the requests")
    precondition((whole.1 == nil) == (split.1 == nil), "split changed whether there is an error: \(whole.1 ?? 0) vs \(split.1 ?? 0)")
    return 0
}
