import AppDevelopers
import Foundation
import Primitives
import Testing

/// Schemas and counters at the edges of what a Double and an Int hold: the value reached is
/// computed without a trap, even for a schema that was stored before the rules refused it.
@Suite struct ExtremeSchemaTests {
    static func revenueSchema(min: Double, max: Double, from: Int = 10, to: Int = 63) -> ConversionValueSchema {
        ConversionValueSchema(fine: [.init(from: from, to: to, meaning: "purchase", revenue: .init(min: min, max: max, currency: "EUR"))])
    }

    @Test(arguments: [1e20, 1e308, .greatestFiniteMagnitude, .infinity, 1e-300, .leastNonzeroMagnitude, 100, 99.999])
    func anyRevenueReachesAValueInTheRange(amount: Double) {
        for schema in [Self.revenueSchema(min: 0, max: 100), Self.revenueSchema(min: 0, max: 1e-300),
                       Self.revenueSchema(min: 1e308, max: .greatestFiniteMagnitude), Self.revenueSchema(min: 5, max: 5),
                       Self.revenueSchema(min: 0, max: 100, from: 63, to: 63)] {
            let value = NextConversionValue.fineValue(schema: schema, counters: counters(revenue: ["EUR": amount]))
            if let value { #expect((schema.fine[0].from...schema.fine[0].to).contains(value), "\(amount) in \(schema.fine[0])") }
        }
        #expect(NextConversionValue.fineValue(schema: Self.revenueSchema(min: 0, max: 100), counters: counters(revenue: ["EUR": amount]))
                == (amount >= 100 ? 63 : 10 + Int((amount / 100 * 54).rounded(.down))))
    }

    @Test func aRangeStoredOutOfOrderReachesNothingAndNamesNothing() {
        // As a hand-edited apps.json may hold it: never checked, never a trap.
        let schema = ConversionValueSchema(fine: [.init(from: 10, to: 5, meaning: "backwards", events: ["a"]),
                                                  .init(from: 70, to: 90, meaning: "past 63", events: ["a"])])
        #expect(NextConversionValue.fineValue(schema: schema, counters: counters(events: ["a": .max])) == nil)
        #expect(schema.meaning(fine: 7) == nil)
    }

    @Test func theMostEventsAnIntHoldsStopAtTheRangesEnd() {
        let schema = ConversionValueSchema(fine: [.init(from: 1, to: 9, meaning: "levels", events: ["level"])])
        #expect(NextConversionValue.fineValue(schema: schema, counters: counters(events: ["level": .max])) == 9)
    }

    @Test(arguments: [(0.0, 1e-300), (5.0, 5.0), (5.0, 4.0), (0.0, 1e13), (-1.0, 5.0), (-0.0, 5.0), (0.0, .infinity), (.nan, 5.0)])
    func registrationRefusesADegenerateRange(min: Double, max: Double) {
        #expect(throws: RequestProblem.self) { try Self.revenueSchema(min: min, max: max).check() }
    }

    @Test func registrationTakesACentWideRangeAndTheLargestAmount() throws {
        try Self.revenueSchema(min: 0, max: 0.01).check()
        try Self.revenueSchema(min: 0, max: ConversionValueSchema.maxRevenue).check()
    }

    /// The demo's schema, which the fuzz target answers counters with when no registration comes first.
    static let demo = schema

    /// What the fuzzer found (and the two crashes of issue 27), replayed as it replays them.
    @Test func fuzzFixturesNeverTrap() throws {
        let folder = try #require(Bundle.module.url(forResource: "Resources/fuzz-fixtures", withExtension: nil))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".txt") }.sorted()
        #expect(files.count >= 2)
        for file in files {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(file)))
            // As the fuzz target reads them: the counters alone (with the demo's schema), or a registration first.
            var used = Self.demo
            var countersBytes = bytes[...]
            if let newline = bytes.firstIndex(of: 0x0A) {
                countersBytes = bytes[(newline + 1)...]
                if let registration = try? JSONParser().parse(Array(bytes[..<newline])), let app = try? AppRegistryInput.app(from: registration) {
                    used = app.schema
                }
            }
            guard let json = try? JSONParser().parse(Array(countersBytes)), let counters = try? AppCounters.read(json) else { continue }
            let answer = try? NextConversionValue.answer(for: counters, schema: used, now: counters.firstLaunch)
            if let fine = answer?.conversionValue { #expect((0...63).contains(fine), "\(file)") }
        }
    }

    @Test func theTwoCrashesOfTheReportAreRefusedByTheRules() throws {
        let wide = ConversionValueSchema(fine: [.init(from: 10, to: 63, meaning: "purchase", revenue: .init(min: 0, max: 1e-300, currency: "EUR"))])
        #expect(throws: RequestProblem.self) { try wide.check() }
        let json = try JSONParser().parse(Array(#"{"app_id":1,"first_launch":1762000000,"revenue":{"EUR":1e20}}"#.utf8))
        #expect(throws: RequestProblem.self) { try AppCounters.read(json) }
    }
}

