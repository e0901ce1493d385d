import Primitives
import Testing
@testable import Endpoint

@Suite struct RejectionLogTests {
    @Test func countsEveryRejectionAndKeepsTheLastFewBodies() {
        let log = RejectionLog(capacity: 3, maxBodyBytes: 10)
        for n in 0..<5 {
            log.record(time: Timestamp(millisecondsSinceEpoch: Int64(n)), status: 422, rule: n < 4 ? "out_of_range" : "same_site",
                       field: "source_id", detail: "d\(n)", body: Array("body number \(n)".utf8))
        }
        #expect(log.counts == ["out_of_range": 4, "same_site": 1])
        #expect(log.recent.map(\.detail) == ["d2", "d3", "d4"])
        #expect(log.recent[0].body == Array("body numbe".utf8))
        #expect(log.recent[0].bodyTruncated)
    }
}
