import Foundation
import PCM
import PCMRecords
import HTTPServer
import Postbacks
import Primitives
import Testing
@testable import Endpoint

@Suite struct AcknowledgementTests {
    /// The acknowledgement is written as bytes from constants; read back as JSON, it must say
    /// exactly what was stored, for each role and verdict, escaping what needs it.
    @Test(arguments: [ReportRole.source, .destination], [StoredReport.Verdict.accepted, .quarantined])
    func saysWhatWasStored(role: ReportRole, verdict: StoredReport.Verdict) throws {
        let reasons = verdict == .accepted ? [] : ["late", "odd \"reason\"\n"]
        let response = ReportHandler.acknowledgement(id: 9_007, receivedAt: Timestamp(millisecondsSinceEpoch: 1_795_168_800_123),
                                                    role, verdict, reasons)
        #expect(response.status == 201)
        guard case .bytes(let body) = response.body else {
            Issue.record("the acknowledgement is not a byte body")
            return
        }
        let ack = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(ack["id"] as? Int == 9_007)
        #expect(ack["received_at"] as? String == "2026-11-20T10:00:00.123Z")
        #expect(ack["role"] as? String == role.rawValue)
        #expect(ack["verdict"] as? String == (verdict == .accepted ? "accepted" : "quarantined"))
        #expect(ack["reasons"] as? [String] == reasons)
        #expect(Set(ack.keys) == ["id", "received_at", "role", "verdict", "reasons"])
    }

    /// A postback's, from the same writer: its verdict, signature and reasons, or for a copy
    /// already stored only the first one's id.
    @Test func aPostbacksSaysWhatWasStoredOrThatItIsARetry() throws {
        func read(_ response: HTTPResponse) throws -> [String: Any] {
            guard case .bytes(let body) = response.body else { throw CocoaError(.coderInvalidValue) }
            #expect(body.last == UInt8(ascii: "\n"))
            return try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        }
        let stored = PostbackHandler.acknowledgement(id: 3, retry: false, verdict: .quarantined, signature: .testKey,
                                                    reasons: ["test_key", "odd \"reason\""])
        #expect(stored.status == 200)
        let ack = try read(stored)
        #expect(ack["id"] as? Int == 3 && ack["verdict"] as? String == "quarantined")
        #expect(ack["signature"] as? String == SignatureOutcome.testKey.name)
        #expect(ack["reasons"] as? [String] == ["test_key", "odd \"reason\""])
        #expect(Set(ack.keys) == ["id", "verdict", "signature", "reasons"])
        let retry = try read(PostbackHandler.acknowledgement(id: 3, retry: true, verdict: nil, signature: nil, reasons: []))
        #expect(retry.count == 2 && retry["id"] as? Int == 3 && retry["retry"] as? Bool == true)
    }
}
