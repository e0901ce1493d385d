import Locking
import Primitives

/// What was refused and why: a counter per rule, and the last few hundred refused bodies, so a
/// site owner can see what a misconfigured pixel or proxy is sending. Memory only, bounded, and
/// never holding the sender's address or User-Agent.
///
/// Each refusal is kept with the served site it was sent to, when it was sent to one: a viewer
/// token scoped to an advertiser sees the refusals at its sites alone.
final class RejectionLog: Sendable {
    struct Entry: Sendable {
        var time: Timestamp
        var status: Int
        var rule: String
        var field: String?
        var detail: String
        /// The served site the request was sent to (its `Host`); nil for any other name.
        var site: String?
        /// The body as received, cut at `maxBodyBytes`.
        var body: [UInt8]
        var bodyTruncated: Bool
    }

    let capacity: Int
    let maxBodyBytes: Int
    private let state: Locked<(counts: [String: Int], bySite: [String: [String: Int]], ring: [Entry], next: Int)>

    init(capacity: Int = 256, maxBodyBytes: Int = 4096) {
        self.capacity = capacity
        self.maxBodyBytes = maxBodyBytes
        state = Locked(([:], [:], [], 0))
    }

    /// `site` must be a served site (`HandlerContext.servedSite`), so that the counts by site stay
    /// as few as the sites.
    func record(time: Timestamp, status: Int, rule: String, field: String?, detail: String, site: String? = nil, body: [UInt8]) {
        let entry = Entry(time: time, status: status, rule: rule, field: field, detail: detail, site: site,
                          body: Array(body.prefix(maxBodyBytes)), bodyTruncated: body.count > maxBodyBytes)
        state.withLock { s in
            s.counts[rule, default: 0] += 1
            if let site { s.bySite[site, default: [:]][rule, default: 0] += 1 }
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

    /// Rejections so far by rule, of those sent to one of `sites` (nil: all of them).
    func counts(readableSites sites: Set<String>?) -> [String: Int] {
        guard let sites else { return counts }
        return state.withLock { s in
            var counts: [String: Int] = [:]
            for site in sites { for (rule, n) in s.bySite[site] ?? [:] { counts[rule, default: 0] += n } }
            return counts
        }
    }

    /// The kept entries, oldest first.
    var recent: [Entry] {
        state.withLock { s in
            s.ring.count < capacity ? s.ring : Array(s.ring[s.next...] + s.ring[..<s.next])
        }
    }
}
