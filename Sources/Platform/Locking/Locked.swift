#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex.
///
/// Never a bare closure as `Value`: `withLock`'s `inout` reabstracts it and writes it back
/// wrapped in thunks, two more on every call (`TurnRequester` holds its closure in a struct).
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer understands pthread mutexes
/// but not the futex calls `Mutex` makes on Linux, and CI runs the live tests under TSan: with
/// `Mutex` every lock-protected access between threads would be reported as a race.
public final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
