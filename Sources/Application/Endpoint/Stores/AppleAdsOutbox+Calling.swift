import AppleAds
import AppleAdsRecords
import Dispatch
import Foundation
import Locking
import Primitives
import RecordLog

/// The `apple-ads-calls` thread: the calls that are due, at most `maxInFlight` at once, each
/// outcome recorded before the outbox acts on it.
extension AppleAdsOutbox {
    func start() {
        let replayFirst = !isReady
        if replayFirst { replaying.enter() }
        thread.startThread(named: "apple-ads-calls") { [self] in
            if replayFirst {
                beforeReplay()
                let started = Date()
                replay()
                let done = state.withLock { s -> Bool in
                    if !s.stopping { s.ready = true }
                    return s.ready
                }
                replaying.leave()
                if done {
                    EventLog.write("apple_ads_replayed", ["seconds": .number(String(format: "%.3f", Date().timeIntervalSince(started))),
                                                          "segments_from_digests": .number(String(segmentsFromDigests))])
                }
            }
            run()
        }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        changed.signal()
        thread.wait()
        client.stop()
    }

    /// Looks for due calls now: after the clock moved (a manual clock, a test).
    func poke() {
        changed.signal()
    }

    /// Blocks until no call is under way and none is due at the clock's time, or `timeout`
    /// seconds passed; returns whether it settled. For tests and the demo.
    @discardableResult
    func waitUntilSettled(timeout: Double) -> Bool {
        let signal = DispatchSemaphore(value: 0)
        settled.withLock { $0.append(signal) }
        poke()
        return signal.wait(timeout: .now() + timeout) == .success
    }

    func run() {
        while true {
            let now = clock.now()
            let (expired, due, wake, stopping) = state.withLock { s -> ([Entry], [Entry], Int64?, Bool) in
                if s.stopping { return ([], [], nil, true) }
                s.forgetSettled(before: now.millisecondsSinceEpoch - Self.settledKept)
                // 24 h without a final answer: recorded as expired without a call, paused or not.
                var expired: [Entry] = []
                while let oldest = s.oldestPending(), !oldest.busy,
                      oldest.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds <= now.millisecondsSinceEpoch {
                    s.entries[oldest.tokenID]?.busy = true
                    s.busy += 1
                    s.arrivalsHead += 1
                    expired.append(oldest)
                }
                let ids = s.schedule.takeDue(now: now.millisecondsSinceEpoch, inFlight: s.busy, maxInFlight: maxInFlight) { id, at in
                    guard s.pending.contains(id), let entry = s.entries[id], !entry.busy else { return false }
                    return (entry.nextAttempt?.millisecondsSinceEpoch ?? 0) == at
                }
                var due: [Entry] = []
                for id in ids {
                    guard var entry = s.entries[id] else { continue }
                    entry.busy = true
                    s.entries[id] = entry
                    s.busy += 1
                    due.append(entry)
                }
                var wake = s.schedule.nextWake(inFlight: s.busy, maxInFlight: maxInFlight)
                // A busy oldest token's expiry is its call's business: waking for it would spin.
                if let oldest = s.oldestPending(), !oldest.busy {
                    let expiry = oldest.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds
                    wake = min(wake ?? expiry, expiry)
                }
                return (expired, due, wake, false)
            }
            if stopping { return }
            for entry in expired {
                record(StoredAppleAdsCall(tokenID: entry.tokenID, at: now, called: false, httpStatus: nil, status: .expired,
                                          nextAttempt: nil, record: nil, token: Self.summary(of: entry, called: false, httpStatus: nil)),
                       outcome: "expired")
            }
            for entry in due { call(entry, at: now) }
            if expired.isEmpty && due.isEmpty {
                notifySettledIfIdle(now: now)
                // A system clock: sleep until the next call is due (at most a second, so that a
                // clock set by hand is noticed too); woken early by a new token, an answer or a poke.
                let milliseconds = wake.map { max(1, min(1000, $0 - now.millisecondsSinceEpoch)) } ?? 1000
                _ = changed.wait(timeout: .now() + .milliseconds(Int(milliseconds)))
            }
        }
    }

    func notifySettledIfIdle(now: Timestamp) {
        let idle = state.withLock { s in
            s.busy == 0 && (s.schedule.nextWake(inFlight: 0, maxInFlight: maxInFlight).map { $0 > now.millisecondsSinceEpoch } ?? true)
        }
        guard idle else { return }
        for signal in settled.withLock({ list -> [DispatchSemaphore] in defer { list = [] }; return list }) { signal.signal() }
    }

    func call(_ entry: Entry, at now: Timestamp) {
        guard let token = entry.token,
              now.millisecondsSinceEpoch < entry.receivedAt.millisecondsSinceEpoch + AppleAdsToken.lifetimeMilliseconds else {
            // 24 h without a final answer: Apple would refuse the token now.
            return record(StoredAppleAdsCall(tokenID: entry.tokenID, at: now, called: false, httpStatus: nil, status: .expired,
                                             nextAttempt: nil, record: nil, token: Self.summary(of: entry, called: false, httpStatus: nil)),
                          outcome: "expired")
        }
        client.call(token: token) { [self] status, body in
            // Cancelled by a stop: not a failure of Apple's; the next start calls again at once.
            guard !state.withLock({ $0.stopping }) else { return }
            let answeredAt = clock.now()
            let record = status == 200 ? AppleAdsRecord.read(body) : nil
            let unavailable = AppleAdsCallPolicy.meansUnavailable(status: status, recordReadable: record != nil)
            state.withLock { $0.schedule.apiAnswered(unavailable: unavailable, now: answeredAt.millisecondsSinceEpoch) }
            // A copy: the outbox's own counts change only once the call's record is on disk.
            var history = entry.history
            let decision = AppleAdsCallPolicy.decide(status: status, record: record, history: &history, receivedAt: entry.receivedAt,
                                                     now: answeredAt)
            let call: StoredAppleAdsCall, outcome: String
            switch decision {
            case .final(let final):
                call = StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: final, nextAttempt: nil,
                                          record: final == .attributed || final == .notAttributed || final == .test ? record : nil,
                                          token: Self.summary(of: entry, called: true, httpStatus: status))
                outcome = final.name
            case .retry(let at):
                call = StoredAppleAdsCall(tokenID: entry.tokenID, at: answeredAt, httpStatus: status, status: .pending, nextAttempt: at, record: nil)
                outcome = unavailable ? "unavailable" : "retry_not_found"
            }
            self.record(call, outcome: outcome)
        }
    }

    /// Writes a call's outcome, and acts on it once it is on disk.
    func record(_ call: StoredAppleAdsCall, outcome: String) {
        store.appendAppleAdsCall(call) { [self] result in
            state.withLock { s in
                guard var entry = s.entries[call.tokenID] else { return }
                entry.busy = false
                s.busy -= 1
                switch result {
                case .success(let written):
                    var stored = call
                    stored.at = written.at
                    Self.apply(stored, to: &entry)
                    s.counts.calls[outcome, default: 0] += 1
                    if entry.status.isFinal {
                        s.settle(entry, recordStart: written.start)
                        return
                    }
                case .failure:
                    // Not on disk: the call counts for nothing, and is made again later.
                    entry.nextAttempt = Timestamp(millisecondsSinceEpoch: clock.now().millisecondsSinceEpoch + AppleAdsCallPolicy.firstBackoff)
                }
                if !entry.status.isFinal, let next = entry.nextAttempt {
                    s.schedule.schedule(call.tokenID, at: next.millisecondsSinceEpoch)
                }
                s.entries[call.tokenID] = entry
            }
            changed.signal()
        }
        turns.request()
    }
}
