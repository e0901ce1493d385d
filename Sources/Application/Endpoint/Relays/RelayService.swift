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
    /// The deliveries by destination name, and the destinations an admin paused (by name, so
    /// that a pause holds across a change of the registration and before its delivery starts;
    /// not across a restart). One lock: a delivery starts paused or is paused, never neither.
    private let state = Locked<(running: [String: RelayDelivery], paused: Set<String>)>(([:], []))
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
        let (leaving, current) = state.withLock { s -> ([RelayDelivery], [String: RelayDelivery]) in
            let leaving = s.running.values.filter { wanted[$0.destination.name] != $0.destination }
            for delivery in leaving { s.running[delivery.destination.name] = nil }
            s.paused.formIntersection(wanted.keys)
            return (leaving, s.running)
        }
        // Each waits for its attempt in flight: together, not one after another.
        DispatchQueue.concurrentPerform(iterations: leaving.count) { leaving[$0].stop() }
        for (name, destination) in wanted.sorted(by: { $0.key < $1.key }) where current[name] == nil {
            var observeTurns: (@Sendable (LogTurn) -> Void)?
            if let observer { observeTurns = { turn in observer(name, turn) } }
            let delivery = RelayDelivery(destination: destination, store: store, node: node, directory: directory,
                                         select: RelayCopySelector.select(for: destination),
                                         transport: URLSessionRelayTransport(timeout: timeout), clock: clock,
                                         announce: { EventLog.write($0, $1) }, observer: observeTurns)
            state.withLock { s in
                if s.paused.contains(name) { delivery.pause() }
                s.running[name] = delivery
            }
            delivery.start()
        }
    }

    /// False when no destination is registered under that name.
    func pause(_ name: String) -> Bool {
        guard registry.registry.destination(named: name) != nil else { return false }
        state.withLock { s in
            s.paused.insert(name)
            s.running[name]?.pause()
        }
        return true
    }

    func resume(_ name: String) -> Bool {
        guard registry.registry.destination(named: name) != nil else { return false }
        state.withLock { s in
            s.paused.remove(name)
            s.running[name]?.resume()
        }
        return true
    }

    func isPaused(_ name: String) -> Bool { state.withLock { $0.paused.contains(name) } }

    var statuses: [RelayDelivery.Status] {
        state.withLock { Array($0.running.values) }.map(\.status).sorted { $0.name < $1.name }
    }

    func stop() {
        stopped.withLock { $0 = true }
        changes.sync {}
        let all = state.withLock { s in defer { s.running = [:] }; return Array(s.running.values) }
        // Each waits for its attempt in flight, cancelled: together, not one after another.
        DispatchQueue.concurrentPerform(iterations: all.count) { all[$0].stop() }
    }
}
