import AppleAds
import AppleAdsRecords
import ClickHouseExport
import Dispatch
import Foundation
import Locking
import PCM
import PCMRecords
import Postbacks
import Primitives
import RecordLog
import SiteOwners

/// A log holding every kind of record, written through the owners' own appends, and the tables
/// the endpoint exports it to (the same declarations, from a copy of their shape: this target
/// cannot see the endpoint's).
final class ExportTestLog: Sendable {
    let directory: String
    let store: RecordLog
    private let now = Locked<Int64>(1_795_168_800_000)  // 2026-11-20T10:00:00Z

    init(directory: String? = nil) throws {
        let path = directory ?? (NSTemporaryDirectory() + "clickhouse-export-tests-" + UUID().uuidString)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.directory = path
        let now = self.now
        store = try RecordLog(directory: path, clock: { Timestamp(millisecondsSinceEpoch: now.withLock { $0 += 1_000; return $0 }) })
    }

    func close() { store.close() }

    private func wait(_ body: (@escaping @Sendable () -> Void) -> Void) {
        let done = DispatchSemaphore(value: 0)
        body { done.signal() }
        done.wait()
    }

    /// `n` reports: source_id n % 256, trigger_data n % 16, with secret tokens and one unknown member.
    func reports(_ range: Range<Int>) {
        for n in range {
            let body = #"{"source_engagement_type":"click","source_site":"news.example","source_id":\#(n % 256),"attributed_on_site":"shop.example","trigger_data":\#(n % 16),"version":3,"source_secret_token":"c2VjcmV0","note":"n\#(n)"}"#
            let draft = StoredReport.Draft(role: .destination, verdict: .accepted, reasons: [], body: Array(body.utf8))
            wait { done in store.append(draft, completion: { (_: Result<StoredReport, StoreError>) in done() }) }
        }
    }

    func trigger(data: UInt8) {
        wait { done in store.appendTrigger(site: "shop.example", triggerData: data, priority: 0, attributionSource: nil, completion: { (_: Result<Trigger, StoreError>) in done() }) }
    }

    func postback(transaction: String) {
        let body = #"{"version":"4.0","ad-network-id":"demo.skadnetwork","source-identifier":"42","app-id":6443210987,"transaction-id":"\#(transaction)","redownload":false,"fidelity-type":1,"did-win":true,"postback-sequence-index":0,"attribution-signature":"MEU="}"#
        let draft = StoredPostback.Draft(protocol: .skadnetwork, site: "app.example", verdict: .accepted, reasons: [],
                                         signature: .testKey, keyName: "demo-key", duplicateKey: "skadnetwork/" + transaction,
                                         contentHash: PostbackContent.fingerprint(Array(body.utf8)), body: Array(body.utf8))
        wait { done in store.append(draft) { step in if case .written = step { return }; done() } }
    }

    func retry(of id: UInt64) {
        wait { done in store.appendRetry(of: id, protocol: .skadnetwork) { step in if case .written = step { return }; done() } }
    }

    func appleAdsTokenAndCall() {
        let tokenID = Locked<UInt64>(0)
        wait { done in
            store.appendAppleAdsToken(publicID: Array(repeating: 7, count: 16), site: "app.example", token: "SECRET-TOKEN") { result in
                if case .success(let token) = result { tokenID.withLock { $0 = token.id } }
                done()
            }
        }
        let call = StoredAppleAdsCall(tokenID: tokenID.withLock { $0 }, at: Timestamp(millisecondsSinceEpoch: 1_795_168_900_000),
                                      httpStatus: 200, status: .attributed, nextAttempt: nil,
                                      record: AppleAdsRecord.read(Array(#"{"attribution":true,"orgId":40669820,"campaignId":542370539,"countryOrRegion":"US"}"#.utf8)))
        wait { done in store.appendAppleAdsCall(call) { _ in done() } }
    }

    static let schema = ClickHouseSchema(tables: [
        ClickHouseTable(name: "pcm_reports", codec: ReportExportCodec(), columns: [
            .init("role", .string), .init("site", .string), .init("source_id", .nullable(.uint8)),
            .init("trigger_data", .nullable(.uint8)), .init("version", .nullable(.uint8)),
        ], omitted: ["source_secret_token"], rollup: ClickHouseRollup(name: "pcm_report_counts", keys: [
            .init("role", .string), .init("trigger_data", .uint8),
        ]) { row, _ in
            let fields = Dictionary(row.members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            guard let role = fields["role"], let data = fields["trigger_data"] else { return nil }
            return [role, data]
        }),
        ClickHouseTable(name: "pcm_triggers", codec: TriggerExportCodec(), columns: [
            .init("site", .string), .init("trigger_data", .uint8), .init("priority", .uint8),
        ]),
        ClickHouseTable(name: "postbacks", codec: PostbackExportCodec.withoutLedger(), columns: [
            .init("duplicate_key", .string), .init("content_hash", .uint64), .init("transaction-id", .string),
            .init("redownload", .nullable(.uint8)), .init("app-id", .nullable(.uint64)),
        ]),
        ClickHouseTable(name: "postback_retries", codec: PostbackRetryExportCodec(), columns: [.init("retry_of", .uint64)]),
        ClickHouseTable(name: "apple_ads_tokens", codec: AppleAdsTokenExportCodec(), columns: [.init("site", .string)]),
        ClickHouseTable(name: "apple_ads_calls", codec: AppleAdsCallExportCodec(), columns: [
            .init("token_id", .uint64), .init("status", .string), .init("orgId", .nullable(.int64)),
        ]),
    ])
}
