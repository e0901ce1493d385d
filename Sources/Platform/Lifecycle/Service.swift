/// Something that runs beside the requests (a thread, a pool, the listener), with a start and a
/// stop. Each is declared once, by name, in the order a `ServiceGroup` starts them.
public struct Service: Sendable {
    public let name: String
    let start: @Sendable () throws -> Void
    let stop: @Sendable () -> Void

    /// `start` may throw: the group then stops what it had started, in reverse, and rethrows.
    /// A service started by another (the digests, once the postback rebuild is done) declares
    /// no start of its own and is stopped in its place all the same.
    public init(_ name: String, start: @escaping @Sendable () throws -> Void = {}, stop: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.start = start
        self.stop = stop
    }
}
