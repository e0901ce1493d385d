import Foundation
import PCM
import PCMRecords
import Primitives
import Testing
@testable import Endpoint

@Suite struct AcknowledgementTests {
    /// The acknowledgement is written as bytes from constants; read back as JSON, it must say
    /// exactly what was stored, for each role and verdict, escaping what needs it.
    @Test(arguments: [ReportRole.source, .destination], [StoredReport.Verdict.accepted, .quarantined])
    func saysWhatWasStored(role: ReportRole, verdict: StoredReport.Verdict) throws {
        let reasons = verdict == .accepted ? [] : ["late", "odd \"reason\"\n"]
        let response = ReportIntake.acknowledgement(id: 9_007, receivedAt: Timestamp(millisecondsSinceEpoch: 1_795_168_800_123),
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
}
