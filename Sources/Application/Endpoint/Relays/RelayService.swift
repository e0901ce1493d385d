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
    private let connections: Int
    private let deadAfter: Double
    private let retry: RetrySchedule
    private let clock: @Sendable () -> Timestamp
    private let observer: (@Sendable (String, LogTurn) -> Void)?
    /// The deliveries by destination name, and the destinations an admin paused before their
    /// delivery started (a delivery keeps its own pause, across restarts). One lock: a delivery
    /// starts paused or is paused, never neither.
    private let state = Locked<(running: [String: RelayDelivery], paused: Set<String>)>(([:], []))
    private let changes = DispatchQueue(label: "relay-sync")
    private let stopped = Locked(false)

    /// `observer` is told each delivery's turns as they end (tests wait on it).
    init(store: RecordLog, node: String, dataDirectory: String, registry: RelayRegistryStore, timeout: Double, connections: Int,
         deadAfter: Double, clock: @escaping @Sendable () -> Timestamp, retry: RetrySchedule,
         bypassing: [String], observer: (@Sendable (String, LogTurn) -> Void)? = nil) throws {
        self.store = store
        self.node = node
        directory = dataDirectory + "/relays"
        self.registry = registry
        self.timeout = timeout
        self.connections = connections
        self.deadAfter = deadAfter
        self.retry = retry
        self.clock = clock
        self.observer = observer
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        // Here, before any service's thread starts: it sets the process's environment, which
        // libcurl reads from other threads.
        switch RelayEgress.install(bypassing: bypassing, announce: { EventLog.write($0, $1) }) {
        case .guarded: break
        case .unreadableProxy(let variable):
            EventLog.write("relay_proxy_ignored", [("reason", .string("\(variable) does not read as http://host:port: the relays' connect guard connects directly"))])
        case .failed(let reason):
            EventLog.write("relay_connect_check_off", [("reason", .string("the connect guard could not start: \(reason); the name is still checked before each round of attempts"))])
        }
    }

    /// The key of this endpoint's destinations in the process's connect guard (`RelayEgress`).
    private let egressKey = Locked<Int?>(nil)

    func start() {
        let registry = registry
        egressKey.withLock { $0 = RelayEgress.register { host, port in Self.policy(registry.registry.destinations, host: host, port: port) } }
        apply(registry.registry.destinations)
    }

    /// Whether two spellings name one host: case and a final dot aside, and an address however it
    /// is written (libcurl writes IPv6 its own way).
    static func sameHost(_ a: String, _ b: String) -> Bool {
        func plain(_ host: String) -> String { host.hasSuffix(".") ? String(host.dropLast()).lowercased() : host.lowercased() }
        if let x = IPAddress(plain(a)), let y = IPAddress(plain(b)) { return x == y }
        return plain(a) == plain(b)
    }

    /// For the connect guard: nil when no destination is at `host:port` over HTTPS; else whether
    /// one there may be internal.
    static func policy(_ destinations: [RelayDestination], host: String, port: Int) -> Bool? {
        var found: Bool?
        for destination in destinations {
            guard let url = try? RelayURL.parse(destination.url, allowHTTP: true, allowInternal: true), url.scheme == "https",
                  url.port == port, Self.sameHost(url.host, host) else { continue }
            found = (found ?? false) || destination.internal
        }
        return found
    }

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
                                         transport: URLSessionRelayTransport(timeout: timeout, connections: connections), clock: clock, retry: retry,
                                         deadAfter: deadAfter, connections: connections,
                                         announce: { EventLog.write($0, $1) }, observer: observeTurns)
            state.withLock { s in
                if s.paused.remove(name) != nil {
                    do { try delivery.pause() } catch { EventLog.write("relay_pause_not_saved", [("destination", .string(name)), ("error", .string("\(error)"))]) }
                }
                s.running[name] = delivery
            }
            delivery.start()
        }
    }

    /// What an admin asks of a destination's delivery.
    enum Change {
        case pause, resume
        case replay(since: Timestamp, until: Timestamp)
        case cancelReplay
    }

    /// Applies `change` to the delivery of the destination `name`, which keeps it across
    /// restarts. A pause asked for before a new registration's delivery starts is applied as it
    /// starts; anything else then is refused as `starting`.
    func change(_ name: String, _ change: Change) throws(Problem) {
        guard registry.registry.destination(named: name) != nil else {
            throw Problem(status: 404, rule: "not_found", field: "name", detail: "no relay destination named \"\(name.prefix(64))\"")
        }
        let delivery = state.withLock { s -> RelayDelivery? in
            switch change {
            case .pause: s.paused.insert(name)
            case .resume: s.paused.remove(name)
            default: break
            }
            return s.running[name]
        }
        guard let delivery else {
            if case .pause = change { return }
            if case .resume = change { return }
            throw Problem(status: 409, rule: "relay_starting", field: "name", detail: "the delivery to \(name.prefix(64)) is starting; ask again in a moment")
        }
        do {
            switch change {
            case .pause:
                do { try delivery.pause() } catch {
                    state.withLock { _ = $0.paused.remove(name) }
                    throw error
                }
            case .resume: try delivery.resume()
            case .replay(let since, let until):
                guard try delivery.replay(since: since, until: until) else {
                    throw Problem(status: 409, rule: "replay_under_way", field: "name",
                                         detail: "a replay to \(name.prefix(64)) is under way; end it first (DELETE /api/relays/replay?name=…)")
                }
            case .cancelReplay:
                guard try delivery.cancelReplay() else {
                    throw Problem(status: 404, rule: "no_replay", field: "name", detail: "no replay to \(name.prefix(64)) is under way")
                }
            }
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(status: 503, rule: "relay_state_unavailable", detail: "the relay's state could not be saved: \(error)")
        }
    }

    /// Paused by an admin before its delivery started.
    func isPausedBeforeStart(_ name: String) -> Bool { state.withLock { $0.paused.contains(name) } }

    var statuses: [RelayDelivery.Status] {
        state.withLock { Array($0.running.values) }.map(\.status).sorted { $0.name < $1.name }
    }

    func stop() {
        stopped.withLock { $0 = true }
        changes.sync {}
        let all = state.withLock { s in defer { s.running = [:] }; return Array(s.running.values) }
        // Each waits for its attempt in flight, cancelled: together, not one after another.
        DispatchQueue.concurrentPerform(iterations: all.count) { all[$0].stop() }
        if let key = egressKey.withLock({ $0 }) { RelayEgress.unregister(key) }
    }
}
