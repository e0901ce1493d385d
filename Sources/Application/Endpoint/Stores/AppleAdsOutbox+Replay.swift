import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

/// A start: the outbox rebuilt from the log (and from sealed segments' digests), tokens and calls
/// in the order they were written.
extension AppleAdsOutbox {
    /// Rebuilds the outbox from the log, tokens and calls in the order they were written: each
    /// token is held only until its final call, then counted in the tally (and kept a day if it
    /// was answered in the last one). Sealed segments older than that day are taken from their
    /// digests (`AppleAdsOutbox+Digest`) while they have one, so that a start reads about a day of
    /// the log whatever its history.
    func replay() {
        let end = store.bytesOnDisk
        let cutoff = clock.now().millisecondsSinceEpoch - Self.settledKept
        // Built in place and moved in whole: a day of tokens is held once, never copied.
        var replayed = State()
        func take(_ view: RecordLog.RecordView, fromLog: Bool) {
            if let token = StoredAppleAdsToken.decode(view) {
                replayed.entries[token.id] = Entry(tokenID: token.id, publicID: Self.text(of: token.publicID), site: token.site,
                                          receivedAt: token.receivedAt, tokenHash: tokenHash(token.token), token: token.token,
                                          tokenStart: fromLog ? token.recordStart : nil, nextAttempt: token.receivedAt)
            } else if let call = StoredAppleAdsCall.decode(view) {
                // A second final call for a token still held (never written, but a log is not to be
                // trusted) changes nothing: the token is counted once.
                guard var entry = replayed.entries[call.tokenID], !entry.status.isFinal else {
                    if replayed.entries[call.tokenID] != nil { return }
                    // Its token's record went with a segment retention removed, or is in a
                    // digested segment that settled it: the call says all.
                    if let summary = call.token, call.status.isFinal { replayed.tally.add(Entry.settled(call, summary)) }
                    return
                }
                Self.apply(call, to: &entry)
                guard entry.status.isFinal else {
                    replayed.entries[call.tokenID] = entry
                    return
                }
                guard call.at.millisecondsSinceEpoch >= cutoff else {
                    replayed.tally.add(entry)
                    if call.token == nil { replayed.legacy.append(entry) }
                    replayed.entries[call.tokenID] = nil
                    return
                }
                if call.token != nil {
                    replayed.settle(entry, recordStart: view.start)
                } else {
                    replayed.tally.add(entry)
                    replayed.legacy.append(entry)
                    replayed.entries[call.tokenID] = entry
                    replayed.settled.append((entry.tokenID, call.at.millisecondsSinceEpoch,
                                             AppleAdsPublicID(text: entry.publicID) ?? AppleAdsPublicID(bytes: []), entry.tokenHash))
                }
            }
        }
        var from = 0, digested = 0, records = 0
        for segment in store.segments where segment.sealed {
            guard let last = segment.lastTime, last.millisecondsSinceEpoch < cutoff, let digest = digest(of: segment),
                  let section = digest.sections[digestName], let read = Self.read(section) else { break }
            replayed.tally.merge(read.tally)
            _ = RecordCopy.read(section, from: read.recordsAt, count: read.records) { take($0, fromLog: false) }
            from = segment.end
            digested += 1
        }
        replayed.segmentsFromDigests = digested
        let kinds = (RecordKind.appleAdsToken.number, RecordKind.appleAdsCall.number)
        store.scanEveryRecord(from: from, through: end) { view in
            records &+= 1
            // A stop during a replay in the background ends it: nothing is called, nothing lost.
            if records & 0xFFFF == 0, state.withLock({ $0.stopping }) { return false }
            if view.kind == kinds.0 || view.kind == kinds.1 { take(view, fromLog: true) }
            return true
        }
        var pending: [(id: UInt64, due: Int64)] = []
        for (id, entry) in replayed.entries {
            replayed.index(entry)
            if entry.status == .pending { pending.append((id, entry.nextAttempt?.millisecondsSinceEpoch ?? 0)) }
        }
        for (id, due) in pending.sorted(by: { $0.id < $1.id }) {
            replayed.pending.insert(id)
            replayed.noteArrival(id)
            replayed.schedule.schedule(id, at: due)
        }
        state.withLock { s in
            replayed.stopping = s.stopping
            // Ready when replayed in `init`; in `start`, once it is known not to have been stopped.
            replayed.ready = s.ready
            swap(&s, &replayed)
        }
    }

    /// The segment's digest, if it is whole and of this very segment.
    func digest(of segment: RecordLog.Segment) -> SegmentDigest? {
        guard let digestsDirectory, let data = FileManager.default.contents(atPath: digestsDirectory + "/\(segment.base).digest"),
              let digest = SegmentDigest.decode([UInt8](data)), digest.describes(segment) else { return nil }
        return digest
    }

    /// What a call's record says about its token, live or replayed.
    static func apply(_ call: StoredAppleAdsCall, to entry: inout Entry) {
        if call.called {
            entry.calls += 1
            entry.lastHTTPStatus = call.httpStatus
            if call.httpStatus == 404 { entry.history.notFound += 1 } else if call.status == .pending { entry.history.unavailable += 1 }
        }
        entry.status = call.status
        entry.nextAttempt = call.nextAttempt
        if call.status.isFinal {
            entry.token = nil
            entry.answeredAt = call.at
            entry.record = call.record
        }
    }

    static func text(of publicID: [UInt8]) -> String {
        Hex.text(publicID)
    }

    /// The bytes of a public id's text (zeros for anything that is not 32 hex digits).
    static func bytes(ofText text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        guard digits.count == 32 else { return [UInt8](repeating: 0, count: 16) }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        return (0..<16).map { i in (value(digits[2 * i]).map { $0 << 4 } ?? 0) | (value(digits[2 * i + 1]) ?? 0) }
    }

    /// What a final call's record says of its token, for that record.
    static func summary(of entry: Entry, called: Bool, httpStatus: Int?) -> StoredAppleAdsCall.TokenSummary {
        StoredAppleAdsCall.TokenSummary(publicID: bytes(ofText: entry.publicID), site: entry.site, receivedAt: entry.receivedAt,
                                        calls: entry.calls + (called ? 1 : 0), lastHTTPStatus: called ? httpStatus : entry.lastHTTPStatus)
    }

}

extension AppleAdsOutbox.Entry {
    /// A token as its final call's record tells it.
    static func settled(_ call: StoredAppleAdsCall, _ token: StoredAppleAdsCall.TokenSummary) -> AppleAdsOutbox.Entry {
        var entry = AppleAdsOutbox.Entry(tokenID: call.tokenID, publicID: AppleAdsOutbox.text(of: token.publicID), site: token.site,
                                         receivedAt: token.receivedAt)
        entry.status = call.status
        entry.calls = token.calls
        entry.lastHTTPStatus = token.lastHTTPStatus
        entry.answeredAt = call.at
        entry.record = call.record
        return entry
    }
}
