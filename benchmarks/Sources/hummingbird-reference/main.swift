import Foundation
import Hummingbird

// Usage: hummingbird-reference <port> <durable|validate> [log-path]
// The reference a Swift developer would write with a framework: decode with JSONDecoder, check
// the fields, and in durable mode append the body to a file and fsync before answering.

struct Report: Decodable {
    var source_engagement_type: String
    var source_site: String
    var source_id: Int
    var attributed_on_site: String
    var trigger_data: Int
    var version: Int
}

enum Invalid: Error { case field(String) }

func validate(_ r: Report) throws {
    guard r.source_engagement_type == "click" else { throw Invalid.field("source_engagement_type") }
    guard (0...255).contains(r.source_id) else { throw Invalid.field("source_id") }
    guard (0...15).contains(r.trigger_data) else { throw Invalid.field("trigger_data") }
    guard (1...3).contains(r.version) else { throw Invalid.field("version") }
    for site in [r.source_site, r.attributed_on_site] {
        guard site.contains("."), site == site.lowercased() else { throw Invalid.field("site") }
    }
    guard r.source_site != r.attributed_on_site else { throw Invalid.field("attributed_on_site") }
}

/// One file, appended under a lock and fsynced per report.
final class AppendLog: @unchecked Sendable {
    let fd: Int32
    let lock = NSLock()
    init(path: String) { fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600) }
    func append(_ bytes: [UInt8]) {
        lock.lock()
        defer { lock.unlock() }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
    }
}

let arguments = CommandLine.arguments
let port = Int(arguments.count > 1 ? arguments[1] : "8090") ?? 8090
let durable = (arguments.count > 2 ? arguments[2] : "durable") == "durable"
let log = AppendLog(path: arguments.count > 3 ? arguments[3] : "/tmp/hummingbird-reference.log")

let router = Router()
router.post("/.well-known/private-click-measurement/report-attribution/") { request, context -> HTTPResponse.Status in
    let buffer = try await request.body.collect(upTo: 8192)
    let bytes = Array(buffer.readableBytesView)
    let report = try JSONDecoder().decode(Report.self, from: Data(bytes))
    do { try validate(report) } catch { return .unprocessableContent }
    if durable { log.append(bytes + [0x0A]) }
    return .created
}
let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
try await app.runService()
