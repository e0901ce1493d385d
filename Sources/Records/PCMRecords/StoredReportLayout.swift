import PCM
import Primitives
import RecordLog

extension StoredReport {
    /// Where each part of a stored report lies in its payload (see `encodePayload`), found without
    /// copying anything: `decode` builds a report from it, and the ClickHouse export writes rows
    /// from it at the node's full ingest rate, where a report's allocations show.
    public struct Layout {
        public var role: ReportRole
        public var verdict: Verdict
        /// How many reasons there are, and the bytes holding them: each a u8 length and its UTF-8.
        public var reasonCount: Int
        public var reasons: Range<Int>
        /// The request body, byte for byte.
        public var body: Range<Int>
        public var triggerID: UInt64?
        /// The campaign name's UTF-8.
        public var campaign: Range<Int>?
        public var triggerRecordedAt: Timestamp?
        /// The UTF-8 ids of the keys that verified the source and the destination token.
        public var sourceTokenKeyID: Range<Int>?
        public var destinationTokenKeyID: Range<Int>?

        /// Nil when the layout is wrong: a length past the end, an unknown tag.
        public init?(_ p: UnsafeRawBufferPointer) {
            guard p.count >= 7, let role: ReportRole = p[0] == 1 ? .source : p[0] == 2 ? .destination : nil,
                  let verdict = Verdict(rawValue: p[1]) else { return nil }
            self.role = role
            self.verdict = verdict
            reasonCount = Int(p[2])
            var offset = 3
            for _ in 0..<reasonCount {
                guard offset < p.count, offset + 1 + Int(p[offset]) <= p.count else { return nil }
                offset += 1 + Int(p[offset])
            }
            reasons = 3..<offset
            guard offset + 4 <= p.count else { return nil }
            let bodyLength = Int(p.loadLE(UInt32.self, at: offset))
            offset += 4
            guard offset + bodyLength <= p.count else { return nil }
            body = offset..<(offset + bodyLength)
            offset += bodyLength
            while offset < p.count {
                switch p[offset] {
                case 1, 3:
                    guard offset + 9 <= p.count else { return nil }
                    if p[offset] == 1 {
                        triggerID = p.loadLE(UInt64.self, at: offset + 1)
                    } else {
                        triggerRecordedAt = Timestamp(millisecondsSinceEpoch: p.loadLE(Int64.self, at: offset + 1))
                    }
                    offset += 9
                case 2, 4, 5:
                    guard offset + 2 <= p.count, offset + 2 + Int(p[offset + 1]) <= p.count else { return nil }
                    let text = (offset + 2)..<(offset + 2 + Int(p[offset + 1]))
                    switch p[offset] {
                    case 2: campaign = text
                    case 4: sourceTokenKeyID = text
                    default: destinationTokenKeyID = text
                    }
                    offset = text.upperBound
                default:
                    return nil
                }
            }
        }

        /// Each reason's UTF-8, in order.
        public func forEachReason(in p: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
            var offset = reasons.lowerBound
            while offset < reasons.upperBound {
                let length = Int(p[offset])
                body(UnsafeRawBufferPointer(rebasing: p[(offset + 1)..<(offset + 1 + length)]))
                offset += 1 + length
            }
        }
    }
}
