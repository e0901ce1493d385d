import AppleAds
import AppleAdsRecords
import PCM
import Postbacks
import Primitives
import SiteOwners
import Dispatch
import Foundation
import PCMRecords
import RecordLog

// Usage: log-generator <data-directory> <count> [hours] [--mix app]
// Appends through the real RecordLog (same records, checksums, group commit and segments as
// live ingest), with receive times spread evenly over the last [hours] (24):
// - by default <count> valid v3 PCM reports;
// - with `--mix app`, a top app's mix in which <count> is the postback copies: for every ten,
//   three retries of them, ten Apple Ads tokens each followed by its final call (one in ten after
//   a 404 first), and one PCM report (issue 30: 100,000 postbacks, 100,000 tokens and 10,000
//   reports a day at a tenth of a top app).

var arguments = CommandLine.arguments
let appMix = arguments.contains("--mix") && arguments.last == "app"
if appMix { arguments.removeLast(2) }
guard arguments.count >= 3, let count = Int(arguments[2]) else {
    print("usage: log-generator <data-directory> <count> [hours] [--mix app]")
    exit(64)
}
let hours = arguments.count > 3 ? Int64(arguments[3]) ?? 24 : 24
let end = Int64(Date().timeIntervalSince1970 * 1000)
// Records per unit of <count>: 1 report; or 1 postback + 0.3 retries + 1 token + 1.1 calls + 0.1 reports.
let records = appMix ? count * 35 / 10 : count
let step = max(1, hours * 3_600_000 / Int64(max(records, 1)))
let clockState = ClockState(start: end - step * Int64(records), step: step)
let store = try RecordLog(directory: arguments[1], clock: { clockState.tick() })

final class ClockState: @unchecked Sendable {
    var next: Int64
    let step: Int64
    init(start: Int64, step: Int64) { next = start; self.step = step }
    // Only the store's appending thread calls this, under the store's lock.
    func tick() -> Timestamp {
        defer { next += step }
        return Timestamp(millisecondsSinceEpoch: next)
    }
    var now: Timestamp { Timestamp(millisecondsSinceEpoch: next) }
}

let started = Date()
let group = DispatchGroup()
let sites = ["news.example", "shop.example", "blog.example", "store.example"]

/// The n-th report, as live ingest stores it: a campaign name for most, the matched trigger's
/// time for destination copies, and now and then a late or quarantined verdict.
func report(_ n: Int) -> StoredReport.Draft {
    let source = sites[n % 2], destination = sites[2 + n % 2]
    let sourceID = n % 256, triggerData = (n / 7) % 16
    let body = #"{"source_engagement_type":"click","source_site":"\#(source)","source_id":\#(sourceID),"attributed_on_site":"\#(destination)","trigger_data":\#(triggerData),"version":3}"#
    let role: ReportRole = n % 2 == 0 ? .source : .destination
    let quarantined = n % 37 == 0, late = n % 53 == 0
    return StoredReport.Draft(role: role, verdict: quarantined ? .quarantined : .accepted,
                              reasons: quarantined ? ["no_matching_trigger"] : late ? ["late"] : [], body: Array(body.utf8),
                              campaign: sourceID < 200 ? "Campaign \(sourceID % 40)" : nil,
                              triggerRecordedAt: role == .destination ? Timestamp(millisecondsSinceEpoch: clockState.next - 30 * 3_600_000) : nil)
}

/// The n-th postback copy: a SKAdNetwork 4.0 winning postback of the first window, about the
/// size of a real one, as a verified copy is stored.
func postback(_ n: Int) -> StoredPostback.Draft {
    let transaction = "6\(String(format: "%011d", n))-gen"
    let body = #"{"version":"4.0","ad-network-id":"example123.skadnetwork","source-identifier":"\#(1000 + n % 40)","app-id":525463029,"transaction-id":"\#(transaction)","redownload":false,"fidelity-type":1,"did-win":true,"conversion-value":\#(n % 64),"postback-sequence-index":0,"attribution-signature":"MEUCIQD4rX6eh38qEhuUKHdap345UbmlzA7KEZ1bhWZuYM8MJwIgMnyiiZe6heabDkGwOaKBYrUXQhKtF3P/ERHqkR/XpuA="}"#
    return StoredPostback.Draft(protocol: .skadnetwork, site: "app.example", verdict: .accepted, reasons: [], signature: .apple,
                                keyName: nil, duplicateKey: "example123.skadnetwork|\(transaction)|0",
                                contentHash: UInt64(n) &* 0x9E37_79B9_7F4A_7C15, body: Array(body.utf8))
}

/// Follows a record to disk, for the group.
func steps() -> RecordLog.RecordSteps {
    { step in
        switch step {
        case .written: break
        case .stored, .failed: group.leave()
        }
    }
}

for n in 0..<count {
    guard appMix else {
        group.enter()
        store.append(report(n), completion: { _ in group.leave() })
        if n % 100_000 == 99_999 { group.wait() }
        continue
    }
    group.enter()
    let stored = store.appendPostback(postback(n), steps: steps())
    if n % 10 < 3, let stored {
        group.enter()
        store.appendRetry(of: stored.id, protocol: .skadnetwork, site: "app.example", origin: stored.origin, steps: steps())
    }
    let publicID = (0..<16).map { UInt8(truncatingIfNeeded: (n &* 31) >> ($0 % 8)) }
    group.enter()
    let receivedAt = clockState.now
    if let tokenID = store.appendAppleAdsToken(publicID: publicID, site: "app.example",
                                               token: "gen-token-\(n)-" + String(repeating: "x", count: 110), completion: { _ in group.leave() }) {
        var calls = 1
        if n % 10 == 0 {
            group.enter()
            store.appendAppleAdsCall(StoredAppleAdsCall(tokenID: tokenID, at: clockState.now, httpStatus: 404, status: .pending,
                                                        nextAttempt: Timestamp(millisecondsSinceEpoch: clockState.next + 5_000), record: nil),
                                     completion: { _ in group.leave() })
            calls = 2
        }
        let attributed = n % 4 == 0
        let record = attributed ? AppleAdsRecord(attribution: true, orgID: 40669820, campaignID: 542370539 + Int64(n % 5),
                                                 adGroupID: 542317095, keywordID: 87675432, adID: 542317136,
                                                 conversionType: "Download", claimType: "Click", countryOrRegion: "US")
                                : AppleAdsRecord(attribution: false)
        group.enter()
        store.appendAppleAdsCall(StoredAppleAdsCall(tokenID: tokenID, at: clockState.now, httpStatus: 200,
                                                    status: attributed ? .attributed : .notAttributed, nextAttempt: nil, record: record,
                                                    token: .init(publicID: publicID, site: "app.example", receivedAt: receivedAt,
                                                                 calls: calls, lastHTTPStatus: 200)),
                                 completion: { _ in group.leave() })
    }
    if n % 10 == 0 {
        group.enter()
        store.append(report(n / 10), completion: { _ in group.leave() })
    }
    // Keep the queue bounded: wait for the writer every 20,000 postbacks (about 70,000 records).
    if n % 20_000 == 19_999 { group.wait() }
}
group.wait()
store.close()
let seconds = Date().timeIntervalSince(started)
let kinds: [(String, RecordKind)] = [("reports", .report), ("postbacks", .postback), ("retries", .postbackRetry),
                                     ("apple ads tokens", .appleAdsToken), ("apple ads calls", .appleAdsCall)]
print("wrote \(kinds.map { "\(store.count(of: $0.1)) \($0.0)" }.joined(separator: ", ")) in \(String(format: "%.1f", seconds)) s; "
      + "log \(store.bytesOnDisk) bytes in \(store.segments.count) segments")
