
import Primitives

import Locking

/// What was refused and why: a counter per rule, and the last few hundred refused bodies, so a
/// site owner can see what a misconfigured pixel or proxy is sending. Memory only, bounded, and
/// never holding the sender's address or User-Agent.
public final class RejectionLog: Sendable {
    public struct Entry: Sendable {
        public var time: Timestamp
        public var status: Int
        public var rule: String
        public var field: String?
        public var detail: String
        /// The body as received, cut at `maxBodyBytes`.
        public var body: [UInt8]
        public var bodyTruncated: Bool
    }

    public let capacity: Int
    public let maxBodyBytes: Int
    private let state: Locked<(counts: [String: Int], ring: [Entry], next: Int)>

    public init(capacity: Int = 256, maxBodyBytes: Int = 4096) {
        self.capacity = capacity
        self.maxBodyBytes = maxBodyBytes
        state = Locked(([:], [], 0))
    }

    public func record(time: Timestamp, status: Int, rule: String, field: String?, detail: String, body: [UInt8]) {
        let entry = Entry(time: time, status: status, rule: rule, field: field, detail: detail,
                          body: Array(body.prefix(maxBodyBytes)), bodyTruncated: body.count > maxBodyBytes)
        state.withLock { s in
            s.counts[rule, default: 0] += 1
            if s.ring.count < capacity {
                s.ring.append(entry)
            } else {
                s.ring[s.next] = entry
            }
            s.next = (s.next + 1) % capacity
        }
    }

    /// Rejections so far, by rule.
    public var counts: [String: Int] { state.withLock { $0.counts } }

    /// The kept entries, oldest first.
    public var recent: [Entry] {
        state.withLock { s in
            s.ring.count < capacity ? s.ring : Array(s.ring[s.next...] + s.ring[..<s.next])
        }
    }
}
