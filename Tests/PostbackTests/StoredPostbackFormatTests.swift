import Dispatch
import Foundation
import Primitives
import RecordLog
import Testing
@testable import Postbacks

/// A postback's record keeps the request's Content-Type after everything an earlier version
/// reads: a record with it and one written before it both read back whole.
@Suite struct StoredPostbackFormatTests {
    static func draft(contentType: String?) -> StoredPostback.Draft {
        StoredPostback.Draft(protocol: .skadnetwork, site: "app.example", verdict: .accepted, reasons: [], signature: .testKey,
                             keyName: "demo", duplicateKey: "k", contentHash: 7, body: Array(#"{"app-id":1}"#.utf8), contentType: contentType)
    }

    /// The record's payload as `encodePayload` writes it, read back through a view.
    static func roundTrip(_ payload: [UInt8]) -> StoredPostback? {
        payload.withUnsafeBytes { bytes in
            StoredPostback.decode(RecordLog.RecordView(kind: RecordKind.postback.number, tag: AttributionProtocol.skadnetwork.rawValue, id: 1,
                                                       time: Timestamp(millisecondsSinceEpoch: 0), payload: bytes, start: 0, end: 0))
        }
    }

    @Test func theContentTypeIsKeptAndAnOlderRecordReadsWithout() throws {
        var payload: [UInt8] = []
        StoredPostback.encodePayload(Self.draft(contentType: "application/json; charset=utf-8"), into: &payload)
        let read = try #require(Self.roundTrip(payload))
        #expect(read.draft == Self.draft(contentType: "application/json; charset=utf-8"))
        // An earlier version's record ends with the body.
        let older = Array(payload.dropLast(2 + "application/json; charset=utf-8".utf8.count))
        #expect(Self.roundTrip(older)?.draft == Self.draft(contentType: nil))
        // None sent: none kept.
        var none: [UInt8] = []
        StoredPostback.encodePayload(Self.draft(contentType: nil), into: &none)
        #expect(Self.roundTrip(none)?.draft == Self.draft(contentType: nil))
    }

    @Test func aContentTypeIsCutBetweenCharactersNeverInsideOne() throws {
        var payload: [UInt8] = []
        StoredPostback.encodePayload(Self.draft(contentType: String(repeating: "a", count: 255) + "é"), into: &payload)
        #expect(Self.roundTrip(payload)?.draft.contentType == String(repeating: "a", count: 255))
    }

    @Test func anAbsurdContentTypeIsKeptCut() throws {
        var payload: [UInt8] = []
        StoredPostback.encodePayload(Self.draft(contentType: String(repeating: "a", count: 70_000)), into: &payload)
        #expect(Self.roundTrip(payload)?.draft.contentType?.utf8.count == StoredPostback.maxContentType)
    }
}
