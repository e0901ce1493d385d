import PCM
import Primitives
import SiteOwners
import Dispatch
import Foundation
import PCMRecords
import ReportStore

// Usage: log-generator <data-directory> <count> [hours]
// Appends <count> valid v3 reports through the real ReportStore (same records, checksums and
// group commit as live ingest), with receive times spread evenly over the last [hours] (24).

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[2]) else {
    print("usage: log-generator <data-directory> <count> [hours]")
    exit(64)
}
let hours = arguments.count > 3 ? Int64(arguments[3]) ?? 24 : 24
let end = Int64(Date().timeIntervalSince1970 * 1000)
let step = max(1, hours * 3_600_000 / Int64(max(count, 1)))
let clockState = ClockState(start: end - step * Int64(count), step: step)
let store = try ReportStore(directory: arguments[1], clock: { clockState.tick() })

final class ClockState: @unchecked Sendable {
    var next: Int64
    let step: Int64
    init(start: Int64, step: Int64) { next = start; self.step = step }
    // Only the store's appending thread calls this, under the store's lock.
    func tick() -> Timestamp {
        defer { next += step }
        return Timestamp(millisecondsSinceEpoch: next)
    }
}

let started = Date()
let group = DispatchGroup()
let sites = ["news.example", "shop.example", "blog.example", "store.example"]
for n in 0..<count {
    let source = sites[n % 2], destination = sites[2 + n % 2]
    let sourceID = n % 256, triggerData = (n / 7) % 16
    let body = #"{"source_engagement_type":"click","source_site":"\#(source)","source_id":\#(sourceID),"attributed_on_site":"\#(destination)","trigger_data":\#(triggerData),"version":3}"#
    // What live ingest stores with a report: a campaign name for most, the matched trigger's time
    // for destination copies, and now and then a late or quarantined verdict.
    let role: ReportRole = n % 2 == 0 ? .source : .destination
    let quarantined = n % 37 == 0, late = n % 53 == 0
    let draft = StoredReport.Draft(role: role, verdict: quarantined ? .quarantined : .accepted,
                                   reasons: quarantined ? ["no_matching_trigger"] : late ? ["late"] : [], body: Array(body.utf8),
                                   campaign: sourceID < 200 ? "Campaign \(sourceID % 40)" : nil,
                                   triggerRecordedAt: role == .destination ? Timestamp(millisecondsSinceEpoch: clockState.next - 30 * 3_600_000) : nil)
    group.enter()
    store.append(draft, completion: { _ in group.leave() })
    // Keep the queue bounded: wait for the writer every 100k reports.
    if n % 100_000 == 99_999 { group.wait() }
}
group.wait()
store.close()
let seconds = Date().timeIntervalSince(started)
print("wrote \(count) reports in \(String(format: "%.1f", seconds)) s; log \(store.bytesOnDisk) bytes")
