/// Code that one thread at a time may run: a removal of segments, a sweep asked for by a thread
/// and by hand at once. It guards no value of its own.
///
/// It counts the times it was entered: ThreadSanitizer pairs a pthread mutex with the memory it
/// guards, and a `Locked<Void>` guards none, so it reports the section's own bookkeeping as a race.
public final class CriticalSection: Sendable {
    private let entries = Locked(0)

    public init() {}

    public func run<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        try entries.withLock { (count: inout Int) throws(Failure) -> Result in
            count &+= 1
            return try body()
        }
    }
}
