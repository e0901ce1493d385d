import Dispatch
import Foundation
import Locking
import LogConsumer
import Primitives
import RecordLog
import Relaying
import Relays

/// The relays that run: one `RelayDelivery` per registered destination, each on its own thread
/// with its own cursor in `data/relays/`. When the registrations change, the deliveries follow
/// (`sync`), on a queue of their own: a delivery stopping waits for its attempt in flight, which
/// no request may wait for.
final class RelayService: Sendable {
    private let store: RecordLog
    private let node: String
    private let directory: String
    private let registry: RelayRegistryStore
    private let timeout: Double
    private let clock: @Sendable () -> Timestamp
    private let observer: (@Sendable (String, LogTurn) -> Void)?
    private let running = Locked<[String: RelayDelivery]>([:])
    /// Destinations paused by an admin, by name: they stay paused across a change of their
    /// registration (not across a restart).
    private let paused = Locked<Set<String>>([])
    private let changes = DispatchQueue(label: "relay-sync")
    private let stopped = Locked(false)

    /// `observer` is told each delivery's turns as they end (tests wait on it).
    init(store: RecordLog, node: String, dataDirectory: String, registry: RelayRegistryStore, timeout: Double,
         clock: @escaping @Sendable () -> Timestamp, observer: (@Sendable (String, LogTurn) -> Void)? = nil) throws {
        self.store = store
        self.node = node
        directory = dataDirectory + "/relays"
        self.registry = registry
        self.timeout = timeout
        self.clock = clock
        self.observer = observer
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    func start() { apply(registry.registry.destinations) }

    /// Makes the running deliveries those of the registry now; returns at once.
    func sync() {
        changes.async { [self] in apply(registry.registry.destinations) }
    }

    private func apply(_ destinations: [RelayDestination]) {
        guard !stopped.withLock({ $0 }) else { return }
        let wanted = Dictionary(destinations.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let (leaving, current) = running.withLock { all -> ([RelayDelivery], [String: RelayDelivery]) in
            let leaving = all.values.filter { wanted[$0.destination.name] != $0.destination }
            for delivery in leaving { all[delivery.destination.name] = nil }
            return (leaving, all)
        }
        for delivery in leaving { delivery.stop() }
        for (name, destination) in wanted.sorted(by: { $0.key < $1.key }) where current[name] == nil {
            var observeTurns: (@Sendable (LogTurn) -> Void)?
            if let observer { observeTurns = { turn in observer(name, turn) } }
            let delivery = RelayDelivery(destination: destination, store: store, node: node, directory: directory,
                                         select: RelayCopySelector.select(for: destination),
                                         transport: URLSessionRelayTransport(timeout: timeout), clock: clock,
                                         announce: { EventLog.write($0, $1) }, observer: observeTurns)
            if paused.withLock({ $0.contains(name) }) { delivery.pause() }
            running.withLock { $0[name] = delivery }
            delivery.start()
        }
    }

    /// False when no destination has that name.
    func pause(_ name: String) -> Bool {
        guard let delivery = running.withLock({ $0[name] }) else { return false }
        paused.withLock { _ = $0.insert(name) }
        delivery.pause()
        return true
    }

    func resume(_ name: String) -> Bool {
        guard let delivery = running.withLock({ $0[name] }) else { return false }
        paused.withLock { _ = $0.remove(name) }
        delivery.resume()
        return true
    }

    var statuses: [RelayDelivery.Status] {
        running.withLock { $0.values.map(\.status) }.sorted { $0.name < $1.name }
    }

    func stop() {
        stopped.withLock { $0 = true }
        changes.sync {}
        let all = running.withLock { all in defer { all = [:] }; return Array(all.values) }
        // Each waits for its attempt in flight, cancelled: together, not one after another.
        DispatchQueue.concurrentPerform(iterations: all.count) { all[$0].stop() }
    }
}
