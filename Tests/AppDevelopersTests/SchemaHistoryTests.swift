import Foundation
import Primitives
import Testing
@testable import AppDevelopers

/// Schemas keep their history: a change is a new version from its moment, a postback reads with
/// the version in force while its value could have been set, and one whose window spans a change
/// is ambiguous.
@Suite struct SchemaHistoryTests {
    static let hour: Int64 = 3_600_000
    static let change = Timestamp(rfc3339: "2026-11-21T00:00:00Z")!
    static let v1 = ConversionValueSchema(fine: [.init(from: 0, to: 63, meaning: "purchase")])
    static let v2 = ConversionValueSchema(fine: [.init(from: 0, to: 63, meaning: "level")])

    static func history() throws -> SchemaHistory {
        var history = SchemaHistory(appID: 7, site: "app.example", schema: v1)
        #expect(try history.record(v2, at: change)?.version == 2)
        return history
    }

    func at(_ hoursAfterChange: Int64) -> Timestamp { Self.change.adding(milliseconds: hoursAfterChange * Self.hour) }

    @Test func theWindowsFollowTheProtocolsTiming() {
        let arrival = at(0)
        // Worked out by hand from PROTOCOLS.md: the longest window, the longest delay, and nine
        // days of a device's retries; the latest is 24 h before arrival in every case.
        let retries: Int64 = 9 * 24
        // First postback: its window is up to 2 days, it leaves 24–48 h after.
        let first = ValueSetWindow(arrival: arrival, sequenceIndex: 0)
        #expect(first.latest == at(-24) && first.earliest == at(-48 - 48 - retries))
        #expect(first.earliest == at(-312))
        let second = ValueSetWindow(arrival: arrival, sequenceIndex: 1)
        #expect(second.latest == at(-24) && second.earliest == at(-144 - 5 * 24 - retries))
        let third = ValueSetWindow(arrival: arrival, sequenceIndex: 2)
        #expect(third.earliest == at(-144 - 28 * 24 - retries))
        // Before SKAdNetwork 4: the last update restarts a 24 h timer, then 0–24 h.
        let legacy = ValueSetWindow(arrival: arrival, sequenceIndex: nil)
        #expect(legacy.latest == at(-24) && legacy.earliest == at(-48 - retries))
        #expect(ValueSetWindow.ambiguity(sequenceIndex: 0) == (24 * Self.hour, 312 * Self.hour))
        // Times at the ends of the representable range do not trap.
        _ = ValueSetWindow(arrival: Timestamp(millisecondsSinceEpoch: .min), sequenceIndex: 2)
        _ = ValueSetWindow(arrival: Timestamp(millisecondsSinceEpoch: .max), sequenceIndex: 2)
    }

    @Test func aPostbackReadsWithTheVersionOfItsWindowOrIsAmbiguous() throws {
        let history = try Self.history()
        func reading(_ hours: Int64, _ index: Int? = 0) -> SchemaReading {
            history.reading(ValueSetWindow(arrival: at(hours), sequenceIndex: index))
        }
        // Arrived before the change, or so soon after that its value was set before it: version 1.
        #expect(reading(-100) == .version(1))
        #expect(reading(23) == .version(1))
        // Its span holds the change, or ends at its very moment: either.
        #expect(reading(24) == .ambiguous(1, 2))
        #expect(reading(96) == .ambiguous(1, 2))
        #expect(reading(311) == .ambiguous(1, 2))
        // Its whole span after the change: version 2.
        #expect(reading(312) == .version(2))
        // The same arrival is ambiguous for a later window, which is longer.
        #expect(reading(312, 1) == .ambiguous(1, 2))
        #expect(reading(479, 1) == .ambiguous(1, 2) && reading(480, 1) == .version(2))
        #expect(reading(263, nil) == .ambiguous(1, 2) && reading(264, nil) == .version(2))
    }

    @Test func versionsAreNeverEditedAndTwoChangesInOneMomentKeepTheirOrder() throws {
        var history = try Self.history()
        // The same schema again is no change.
        #expect(try history.record(Self.v2, at: at(5)) == nil)
        let v3 = ConversionValueSchema(fine: [.init(from: 0, to: 63, meaning: "subscription")])
        // Two changes at one instant (a clock that stood still): each later than the one before.
        #expect(try history.record(v3, at: Self.change)?.effectiveFrom == Self.change.adding(milliseconds: 1))
        #expect(history.versions.map(\.version) == [1, 2, 3])
        #expect(history.versions[0].effectiveFrom == nil && history.versions[1].schema == Self.v2)
        // A reading that spans all three names the first and the last.
        #expect(history.reading(ValueSetWindow(arrival: at(30), sequenceIndex: 0)) == .ambiguous(1, 3))
        #expect(history.reading(ValueSetWindow(arrival: at(400), sequenceIndex: 0)) == .version(3))
        // Before any version: version 1, once there is one.
        #expect(history.resolve(.beforeAnyVersion) == .version(1))
    }

    @Test func oneAppHasABoundedNumberOfVersions() throws {
        var history = SchemaHistory(appID: 7, site: "app.example", schema: Self.v1)
        for n in 2...SchemaHistory.maxVersions {
            try history.record(ConversionValueSchema(fine: [.init(from: 0, to: 0, meaning: "m\(n)")]), at: at(Int64(n)))
        }
        #expect(history.versions.count == SchemaHistory.maxVersions)
        #expect(throws: RequestProblem.self) { try history.record(Self.v1, at: at(5000)) }
        do {
            try history.record(Self.v1, at: at(5000))
        } catch {
            #expect(error.rule == "too_many_schema_versions" && error.kind == .conflict && error.field == "schema")
        }
        #expect(history.version(SchemaHistory.maxVersions)?.schema.fine.first?.meaning == "m\(SchemaHistory.maxVersions)")
    }

    @Test func aReadingsCodeRoundTripsAndNoCodeTraps() {
        var readings: [SchemaReading] = [.beforeAnyVersion]
        for a in [1, 2, 17, 1000, SchemaReading.maxVersion] {
            readings.append(.version(a))
            for b in [1, 2, 999, SchemaReading.maxVersion] where b > a { readings.append(.ambiguous(a, b)) }
        }
        for reading in readings { #expect(SchemaReading(code: reading.code) == reading, "\(reading)") }
        // Codes no reading makes (a damaged digest's) read as before any version, never trap.
        for code in [-1, Int.min, Int.max, 1 << 24, 1 << 23 | 1 << 30, SchemaReading.maxVersion + 1] {
            _ = SchemaReading(code: code).versions
        }
        #expect(SchemaReading(code: 1 << 24) == .beforeAnyVersion)
        #expect(SchemaReading.ambiguous(1, 2).versions == 1...2 && SchemaReading.version(4).versions == 4...4)
        // The code fits beside a value code in the Apps view's 32-bit cell.
        #expect(SchemaReading.ambiguous(SchemaReading.maxVersion, SchemaReading.maxVersion).code < 1 << 24)
    }

    @Test func theRegistryKeepsAnAppsVersionsWhenItIsRemovedAndReadsAnOlderFile() throws {
        let rules = SiteRules(developmentMode: false)
        var registry = AppRegistry()
        let t0 = Timestamp(rfc3339: "2026-11-20T10:00:00Z")!
        try registry.add(App(appID: 7, site: "app.example", name: "Game", schema: Self.v1), siteRules: rules, now: t0)
        try registry.replace(App(appID: 7, site: "app.example", name: "Game 2", schema: Self.v2), siteRules: rules, now: Self.change)
        #expect(registry.app(id: 7)?.name == "Game 2" && registry.history(appID: 7)?.versions.count == 2)
        // A renamed app with the same schema makes no version.
        try registry.replace(App(appID: 7, site: "app.example", name: "Game 3", schema: Self.v2), siteRules: rules, now: at(10))
        #expect(registry.history(appID: 7)?.versions.count == 2)
        do {
            try registry.replace(App(appID: 8, site: "app.example", name: "Other", schema: Self.v1), siteRules: rules, now: at(10))
            Issue.record("an app never registered was changed")
        } catch {
            #expect(error.kind == .notFound && error.rule == "unknown_app" && error.field == "app_id")
        }
        // Its versions are its site's owner's: moved to another site, changed or registered again, it is refused.
        for attempt in 0..<2 {
            do {
                let moved = App(appID: 7, site: "other.example", name: "Game", schema: Self.v2)
                if attempt == 0 { try registry.replace(moved, siteRules: rules, now: at(20)) } else {
                    var copy = registry
                    copy.removeApp(appID: 7)
                    try copy.add(moved, siteRules: rules, now: at(20))
                }
                Issue.record("the app moved to another site with its versions")
            } catch {
                #expect(error.rule == "app_site_fixed" && error.kind == .conflict && error.field == "site")
            }
        }
        // Removed and registered again with the first schema: a third version, history kept.
        let removed = registry.removeApp(appID: 7)
        #expect(removed)
        #expect(registry.schemaReading(appID: 7, window: ValueSetWindow(arrival: at(400), sequenceIndex: 0)) == .version(2))
        try registry.add(App(appID: 7, site: "app.example", name: "Game", schema: Self.v1), siteRules: rules, now: at(300))
        #expect(registry.history(appID: 7)?.versions.map(\.schema) == [Self.v1, Self.v2, Self.v1])
        #expect(registry.schema(appID: 7, reading: .version(2))?.schema == Self.v2)
        #expect(registry.schema(appID: 7, reading: .ambiguous(1, 2)) == nil)
        #expect(registry.schema(appID: 9, reading: .version(1)) == nil)

        // A registry written before versions: each app's schema is its version 1.
        let old = #"{"apps":[{"app_id":5,"site":"app.example","name":"Old","schema":{"fine":[{"from":0,"to":63,"meaning":"purchase"}],"coarse":{}}}]}"#
        let read = try JSONDecoder().decode(AppRegistry.self, from: Data(old.utf8))
        #expect(read.history(appID: 5)?.versions.count == 1 && read.history(appID: 5)?.versions[0].schema == Self.v1)
        #expect(read.schemaReading(appID: 5, window: ValueSetWindow(arrival: t0, sequenceIndex: 0)) == .version(1))
        // And what it writes reads back the same.
        let again = try JSONDecoder().decode(AppRegistry.self, from: try JSONEncoder().encode(registry))
        #expect(again == registry)
    }
}
