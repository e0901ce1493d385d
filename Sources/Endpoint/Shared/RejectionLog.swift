import Locking
import Primitives

/// What was refused and why: a counter per rule, and the last few hundred refused bodies, so a
/// site owner can see what a misconfigured pixel or proxy is sending. Memory only, bounded, and
/// never holding the sender's address or User-Agent.
final class RejectionLog: Sendable {
    struct Entry: Sendable {
        var time: Timestamp
        var status: Int
        var rule: String
        var field: String?
        var detail: String
        /// The body as received, cut at `maxBodyBytes`.
        var body: [UInt8]
        var bodyTruncated: Bool
    }

    let capacity: Int
    let maxBodyBytes: Int
    private let state: Locked<(counts: [String: Int], ring: [Entry], next: Int)>

    init(capacity: Int = 256, maxBodyBytes: Int = 4096) {
        self.capacity = capacity
        self.maxBodyBytes = maxBodyBytes
        state = Locked(([:], [], 0))
    }

    func record(time: Timestamp, status: Int, rule: String, field: String?, detail: String, body: [UInt8]) {
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
    var counts: [String: Int] { state.withLock { $0.counts } }

    /// The kept entries, oldest first.
    var recent: [Entry] {
        state.withLock { s in
            s.ring.count < capacity ? s.ring : Array(s.ring[s.next...] + s.ring[..<s.next])
        }
    }
}
