import Lifecycle
import Locking
import Testing

@Suite struct ServiceGroupTests {
    final class Journal: Sendable {
        let lines = Locked<[String]>([])
        func note(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    struct Refused: Error {}

    func services(_ journal: Journal, failing: String? = nil) -> [Service] {
        ["store", "exporter", "listener"].map { name in
            Service(name, start: {
                if name == failing { throw Refused() }
                journal.note("start \(name)")
            }, stop: { journal.note("stop \(name)") })
        }
    }

    @Test func startsInOrderAndStopsInReverse() throws {
        let journal = Journal()
        let group = ServiceGroup(services(journal))
        try group.start()
        group.stop()
        #expect(journal.all == ["start store", "start exporter", "start listener", "stop listener", "stop exporter", "stop store"])
        // Stopped once: a second stop does nothing.
        group.stop()
        #expect(journal.all.count == 6)
    }

    @Test func aServiceThatFailsToStartStopsThoseBeforeItAndNoneAfter() {
        let journal = Journal()
        let events = Locked<[String]>([])
        let group = ServiceGroup(services(journal, failing: "listener"), observe: { name, event in events.withLock { $0.append("\(name) \(event)") } })
        #expect(throws: Refused.self) { try group.start() }
        #expect(journal.all == ["start store", "start exporter", "stop exporter", "stop store"])
        #expect(events.withLock { $0 } == ["store started", "exporter started", "listener failed", "exporter stopped", "store stopped"])
    }

    @Test func aStopBeforeStartLeavesNothingToStartOrStop() throws {
        let journal = Journal()
        let group = ServiceGroup(services(journal))
        group.stop()
        #expect(throws: ServiceGroup.Stopped.self) { try group.start() }
        #expect(journal.all.isEmpty)
    }
}
