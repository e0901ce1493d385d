import AppleAds
import Primitives
import RecordLog

/// A token as the log keeps it: the outbox. Written before the app is answered 202, so that a
/// restart resumes every call not finished.
///
/// Payload after the store's envelope: u8 format (1), 16 bytes public id, u16 + site, u16 + token.
public struct StoredAppleAdsToken: Sendable, Equatable {
    /// The log's id of the record: what calls name.
    public var id: UInt64
    public var receivedAt: Timestamp
    /// The unguessable id the app reads its answer by.
    public var publicID: [UInt8]
    /// The served site the app posted to.
    public var site: String
    public var token: String
    /// Where the record begins in the log, when it was read from there or written: what the outbox
    /// reads the token's bytes back from once it keeps only its hash.
    public var recordStart: Int?

    public init(id: UInt64, receivedAt: Timestamp, publicID: [UInt8], site: String, token: String) {
        self.id = id
        self.receivedAt = receivedAt
        self.publicID = publicID
        self.site = site
        self.token = token
    }

    static func encode(publicID: [UInt8], site: String, token: String, into out: inout [UInt8]) {
        out.append(1)
        out.append(contentsOf: publicID)
        out.appendLE(UInt16(site.utf8.count))
        out.append(contentsOf: site.utf8)
        out.appendLE(UInt16(token.utf8.count))
        out.append(contentsOf: token.utf8)
    }

    public static func decode(_ record: RecordLog.RecordView) -> StoredAppleAdsToken? {
        guard record.kind == RecordKind.appleAdsToken.number else { return nil }
        var r = PayloadReader(record.payload)
        guard r.u8() == 1, let publicID = r.bytes(16), let site = r.text16(), let token = r.text16() else { return nil }
        var stored = StoredAppleAdsToken(id: record.id, receivedAt: record.time, publicID: publicID, site: site, token: token)
        stored.recordStart = record.start
        return stored
    }
}

/// One call to Apple's API for a token, as the log keeps it: what Apple answered and what the
/// policy made of it. Every call is written, retries too, so that a restart knows how many 404s
/// a token has had and never calls again once one is final.
///
/// Payload after the envelope: u8 format (1), u64 token record id, u8 called (0: the token
/// expired before a call), u16 HTTP status (0: no answer), u8 status (`AppleAdsCallPolicy.Status`),
/// u64 next attempt (ms, 0 when final), u16 + the record's JSON (empty unless 200); then, on a
/// final call (earlier versions wrote none), the token's summary: u8 1, 16 bytes public id, u16 + site, i64
/// received at (ms), u32 calls, u16 last HTTP status (0: none).
///
/// The call that makes a token final carries its token's summary, so that the outcome stands
/// alone: the export and the summary read it without the token's record, and the outbox forgets
/// the token once it is final. The summary comes after everything an earlier version reads, which
/// stops there: the format stays 1, and a log written now can still be read by an older binary.
public struct StoredAppleAdsCall: Sendable, Equatable {
    public var tokenID: UInt64
    public var at: Timestamp
    /// False for the record that a token expired without a call.
    public var called: Bool
    /// nil when no answer came (a dropped connection, a time-out).
    public var httpStatus: Int?
    public var status: AppleAdsCallPolicy.Status
    public var nextAttempt: Timestamp?
    public var record: AppleAdsRecord?
    /// On a final call: the token it settles.
    public var token: TokenSummary?

    /// What a final call's record says of its token.
    public struct TokenSummary: Sendable, Equatable {
        public var publicID: [UInt8]
        public var site: String
        public var receivedAt: Timestamp
        /// Calls made for the token, this one included.
        public var calls: Int
        public var lastHTTPStatus: Int?

        public init(publicID: [UInt8], site: String, receivedAt: Timestamp, calls: Int, lastHTTPStatus: Int?) {
            self.publicID = publicID
            self.site = site
            self.receivedAt = receivedAt
            self.calls = calls
            self.lastHTTPStatus = lastHTTPStatus
        }
    }

    public init(tokenID: UInt64, at: Timestamp, called: Bool = true, httpStatus: Int?, status: AppleAdsCallPolicy.Status,
                nextAttempt: Timestamp?, record: AppleAdsRecord?, token: TokenSummary? = nil) {
        self.tokenID = tokenID
        self.at = at
        self.called = called
        self.httpStatus = httpStatus
        self.status = status
        self.nextAttempt = nextAttempt
        self.record = record
        self.token = token
    }

    func encode(into out: inout [UInt8]) {
        out.append(1)
        out.appendLE(tokenID)
        out.append(called ? 1 : 0)
        out.appendLE(UInt16(httpStatus ?? 0))
        out.append(status.rawValue)
        out.appendLE(UInt64(bitPattern: nextAttempt?.millisecondsSinceEpoch ?? 0))
        let json = record.map { Array($0.json.utf8) } ?? []
        out.appendLE(UInt16(json.count))
        out.append(contentsOf: json)
        guard let token else { return }
        out.append(1)
        out.append(contentsOf: token.publicID.prefix(16))
        out.append(contentsOf: [UInt8](repeating: 0, count: max(0, 16 - token.publicID.count)))
        let site = Array(token.site.utf8.prefix(Int(UInt16.max)))
        out.appendLE(UInt16(site.count))
        out.append(contentsOf: site)
        out.appendLE(token.receivedAt.millisecondsSinceEpoch)
        out.appendLE(UInt32(clamping: token.calls))
        out.appendLE(UInt16(clamping: token.lastHTTPStatus ?? 0))
    }

    public static func decode(_ record: RecordLog.RecordView) -> StoredAppleAdsCall? {
        guard record.kind == RecordKind.appleAdsCall.number else { return nil }
        var r = PayloadReader(record.payload)
        guard r.u8() == 1, let tokenID = r.u64(), let called = r.u8(), let http = r.u16(),
              let status = r.u8().flatMap(AppleAdsCallPolicy.Status.init),
              let next = r.u64(), let length = r.u16(), let json = r.bytes(Int(length)) else { return nil }
        var token: TokenSummary?
        if let tag = r.u8() {
            guard tag == 1, let publicID = r.bytes(16), let site = r.text16(), let receivedAt = r.u64(), let calls = r.u32(), let last = r.u16() else { return nil }
            token = TokenSummary(publicID: publicID, site: site, receivedAt: Timestamp(millisecondsSinceEpoch: Int64(bitPattern: receivedAt)),
                                 calls: Int(calls), lastHTTPStatus: last == 0 ? nil : Int(last))
        }
        let answer = json.isEmpty ? nil : AppleAdsRecord.read(json)
        // Apple's Developer Mode answer, written as attributed before this endpoint knew it: read
        // as the test it is, so that no count built from the log takes it for a campaign.
        let standing = status == .attributed && answer?.isTestPayload == true ? .test : status
        return StoredAppleAdsCall(tokenID: tokenID, at: record.time, called: called == 1, httpStatus: http == 0 ? nil : Int(http), status: standing,
                                  nextAttempt: next == 0 ? nil : Timestamp(millisecondsSinceEpoch: Int64(bitPattern: next)),
                                  record: answer, token: token)
    }
}

extension RecordLog {
    /// Queues a token; returns its record id (nil when the store is closing). `completion` runs
    /// once it is on disk, or could not be written.
    @discardableResult
    public func appendAppleAdsToken(publicID: [UInt8], site: String, token: String,
                                    completion: @escaping @Sendable (Result<StoredAppleAdsToken, StoreError>) -> Void) -> UInt64? {
        append(kind: .appleAdsToken, tag: AttributionProtocol.appleAds.rawValue, completion: { result in
            completion(result.map { record in
                var stored = StoredAppleAdsToken(id: record.id, receivedAt: record.time, publicID: publicID, site: site, token: token)
                stored.recordStart = record.recordStart
                return stored
            })
        }, payload: { StoredAppleAdsToken.encode(publicID: publicID, site: site, token: token, into: &$0) })
    }

    /// Queues the record of a call; `at` is the store's receive time, not the call's, and `start`
    /// where the record begins (`record(startingAt:_:)` reads it back).
    public func appendAppleAdsCall(_ call: StoredAppleAdsCall,
                                   completion: @escaping @Sendable (Result<(at: Timestamp, start: Int), StoreError>) -> Void) {
        append(kind: .appleAdsCall, tag: AttributionProtocol.appleAds.rawValue, completion: { completion($0.map { ($0.time, $0.recordStart) }) },
               payload: { call.encode(into: &$0) })
    }
}

extension RecordKind {
    /// An app's Apple Ads attribution token, waiting for Apple's answer: the outbox.
    public static let appleAdsToken = RecordKind(5, name: "apple_ads_token")
    /// One call to Apple's attribution API for a stored token, and what came of it.
    public static let appleAdsCall = RecordKind(6, name: "apple_ads_call")
}
