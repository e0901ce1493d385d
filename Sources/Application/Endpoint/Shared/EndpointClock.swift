import Foundation
import Locking
import Primitives

/// The one clock every time-dependent part of the endpoint reads: the store's receive times,
/// the timing model, the trigger ledger.
///
/// Started with `--manual-clock` it stands still until `POST /admin/clock` sets it, so that
/// tests and demos, in any language, walk through days in seconds.
public final class EndpointClock: Sendable {
    public let isManual: Bool
    private let system: @Sendable () -> Timestamp
    private let fixed: Locked<Timestamp>
    /// Told when a manual clock is set: what waits for a time (the Apple Ads outbox) looks again.
    private let observers = Locked<[@Sendable () -> Void]>([])

    public init(manual: Bool, system: @escaping @Sendable () -> Timestamp = { EndpointClock.systemNow() }) {
        isManual = manual
        self.system = system
        fixed = Locked(system())
    }

    /// The system's time, to the millisecond: what a clock that is not manual reads.
    public static func systemNow() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    public func now() -> Timestamp {
        isManual ? fixed.withLock { $0 } : system()
    }

    /// Sets a manual clock; stays at `time` until set again.
    public func set(_ time: Timestamp) {
        precondition(isManual, "only a manual clock can be set")
        fixed.withLock { $0 = time }
        for observer in observers.withLock({ $0 }) { observer() }
    }

    func whenSet(_ observer: @escaping @Sendable () -> Void) {
        observers.withLock { $0.append(observer) }
    }
}
