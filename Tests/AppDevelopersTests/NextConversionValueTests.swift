import AppDevelopers
import Primitives
import Testing

/// The demo's schema: installed (0), levels completed (1–9, one per level), trial started (10–29),
/// purchase (30–63 over 0.99–49.99 EUR); coarse medium from 10, high from 30; locks at 63 and high.
let schema = ConversionValueSchema(
    fine: [.init(from: 0, to: 0, meaning: "installed"),
           .init(from: 1, to: 9, meaning: "levels completed", events: ["level_complete"]),
           .init(from: 10, to: 29, meaning: "trial started", events: ["trial_start"]),
           .init(from: 30, to: 63, meaning: "purchase", revenue: .init(min: 0.99, max: 49.99, currency: "EUR"))],
    coarse: ["low": "installed", "medium": "played", "high": "paid"],
    coarseFromFine: .init(medium: 10, high: 30), lockAt: .init(fine: 63, coarse: "high"))

let launch = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!

func at(hours: Double) -> Timestamp {
    Timestamp(millisecondsSinceEpoch: launch.millisecondsSinceEpoch + Int64(hours * 3_600_000))
}

func counters(_ framework: AppCounters.Framework = .skadnetwork, version: String = "4.0", current: Int? = nil, coarse: String? = nil,
              events: [String: Int] = [:], revenue: [String: Double] = [:]) -> AppCounters {
    AppCounters(appID: 1, firstLaunch: launch, framework: framework, skAdNetworkVersion: SKAdNetworkAPIVersion(version),
                conversionValue: current, coarseConversionValue: coarse, events: events, revenue: revenue)
}

@Suite struct ConversionWindowTests {
    /// SKAdNetwork 4's windows: days 0–2, 3–7 and 8–35 after first launch, i.e. until 48, 168 and
    /// 840 hours; then none.
    @Test(arguments: [(0.0, 1), (47.99, 1), (48.0, 2), (167.99, 2), (168.0, 3), (839.99, 3)])
    func theWindowComesFromTheTimeSinceFirstLaunch(hours: Double, window: Int) throws {
        for framework in [AppCounters.Framework.skadnetwork, .adattributionkit] {
            let answer = try NextConversionValue.answer(for: counters(framework), schema: schema, now: at(hours: hours))
            #expect(answer.status == .ok && answer.window == window, "\(framework) at \(hours) h")
        }
    }

    @Test func after35DaysEveryWindowIsClosed() throws {
        let answer = try NextConversionValue.answer(for: counters(events: ["trial_start": 1]), schema: schema, now: at(hours: 840))
        #expect(answer == .init(status: .windowClosed, window: nil, conversionValue: nil, coarseConversionValue: nil, lockWindow: false))
        #expect(answer.json.contains("\"status\":\"window_closed\""))
    }

    @Test func aFineValueOnlyInTheFirstWindow() throws {
        let c = counters(events: ["trial_start": 1])
        let first = try NextConversionValue.answer(for: c, schema: schema, now: at(hours: 1))
        #expect(first.conversionValue == 10 && first.coarseConversionValue == "medium")
        for hours in [50.0, 200.0] {
            let later = try NextConversionValue.answer(for: c, schema: schema, now: at(hours: hours))
            #expect(later.conversionValue == nil && later.coarseConversionValue == "medium", "\(hours) h")
        }
    }

    /// A device clock a little ahead is normal; a first launch far in the future is a bad counter.
    @Test func aFirstLaunchInTheFutureIsRefused() throws {
        #expect(try NextConversionValue.answer(for: counters(), schema: schema, now: at(hours: -0.5)).window == 1)
        #expect {
            _ = try NextConversionValue.answer(for: counters(), schema: schema, now: at(hours: -2))
        } throws: { ($0 as? RequestProblem)?.rule == "time_in_the_future" && ($0 as? RequestProblem)?.field == "first_launch" }
    }
}


@Suite struct FineValueTests {
    @Test(arguments: [
        ([:], [:], 0),                                            // installed: a range without conditions
        (["level_complete": 1], [:], 1),
        (["level_complete": 3], [:], 3),                          // one value up per further level
        (["level_complete": 40], [:], 9),                         // never past the range
        (["level_complete": 3, "trial_start": 1], [:], 10),       // the highest range reached
        (["trial_start": 0], [:], 0),                             // an event that did not happen
        ([:], ["EUR": 0.5], 0),                                   // below the range's minimum
        ([:], ["EUR": 0.99], 30),
        ([:], ["EUR": 25.49], 47),                                // 30 + ⌊(25.49 − 0.99) / 49 × 34⌋
        ([:], ["EUR": 49.99], 63),
        ([:], ["EUR": 500], 63),
        ([:], ["USD": 100], 0),                                   // another currency is not converted
    ] as [([String: Int], [String: Double], Int)])
    func theHighestValueReached(events: [String: Int], revenue: [String: Double], value: Int) throws {
        let answer = try NextConversionValue.answer(for: counters(events: events, revenue: revenue), schema: schema, now: at(hours: 2))
        #expect(answer.conversionValue == value)
    }

    @Test func aRangeWithSeveralEventsNeedsEachOfThem() throws {
        let both = ConversionValueSchema(fine: [.init(from: 5, to: 8, meaning: "both", events: ["a", "b"])])
        #expect(NextConversionValue.fineValue(schema: both, counters: counters(events: ["a": 4])) == nil)
        #expect(NextConversionValue.fineValue(schema: both, counters: counters(events: ["a": 4, "b": 2])) == 6)
    }

    /// Before SKAdNetwork 4 `updateConversionValue` ignores a lower value; from 4.0 a lower value
    /// is allowed, so the answer follows the counters.
    @Test func neverLowerWhereTheVersionForbidsIt() throws {
        let old = try NextConversionValue.answer(for: counters(version: "3.0", current: 40, events: ["trial_start": 1]), schema: schema, now: at(hours: 300))
        #expect(old == .init(status: .ok, window: nil, conversionValue: 40, coarseConversionValue: nil, lockWindow: false))
        let rising = try NextConversionValue.answer(for: counters(version: "2.2", current: 5, events: ["trial_start": 1]), schema: schema, now: at(hours: 1))
        #expect(rising.conversionValue == 10)
        let four = try NextConversionValue.answer(for: counters(version: "4.0", current: 40, events: ["trial_start": 1]), schema: schema, now: at(hours: 1))
        #expect(four.conversionValue == 10)
        let kit = try NextConversionValue.answer(for: counters(.adattributionkit, current: 40, events: ["trial_start": 1]), schema: schema, now: at(hours: 1))
        #expect(kit.conversionValue == 10)
    }

    @Test func withoutAnyRangeReachedTheCurrentValueStays() throws {
        let empty = ConversionValueSchema(fine: [.init(from: 20, to: 20, meaning: "x", events: ["never"])])
        let answer = try NextConversionValue.answer(for: counters(current: 7), schema: empty, now: at(hours: 1))
        #expect(answer.conversionValue == 7 && answer.coarseConversionValue == nil)
    }
}

@Suite struct CoarseAndLockTests {
    @Test(arguments: [(9, "low"), (10, "medium"), (29, "medium"), (30, "high")])
    func coarseFromTheFineValue(level: Int, coarse: String) throws {
        let s = ConversionValueSchema(fine: [.init(from: 0, to: 63, meaning: "level", events: ["level"])], coarseFromFine: .init(medium: 10, high: 30))
        let answer = try NextConversionValue.answer(for: counters(events: ["level": level + 1]), schema: s, now: at(hours: 100))
        #expect(answer.coarseConversionValue == coarse)
    }

    @Test func withoutThresholdsTheAppsCoarseValueStays() throws {
        let s = ConversionValueSchema(fine: schema.fine)
        let answer = try NextConversionValue.answer(for: counters(coarse: "medium"), schema: s, now: at(hours: 100))
        #expect(answer.coarseConversionValue == "medium" && answer.lockWindow == false)
    }

    @Test func theFirstWindowLocksAtTheSchemasFineValue() throws {
        let paid = try NextConversionValue.answer(for: counters(revenue: ["EUR": 60]), schema: schema, now: at(hours: 3))
        #expect(paid.conversionValue == 63 && paid.lockWindow)
        let almost = try NextConversionValue.answer(for: counters(revenue: ["EUR": 40]), schema: schema, now: at(hours: 3))
        #expect(almost.conversionValue == 57 && !almost.lockWindow)  // 30 + ⌊(40 − 0.99) / 49 × 34⌋
    }

    @Test func laterWindowsLockAtTheSchemasCoarseValue() throws {
        let paid = try NextConversionValue.answer(for: counters(revenue: ["EUR": 1]), schema: schema, now: at(hours: 100))
        #expect(paid.coarseConversionValue == "high" && paid.lockWindow)
        let played = try NextConversionValue.answer(for: counters(events: ["trial_start": 1]), schema: schema, now: at(hours: 100))
        #expect(played.coarseConversionValue == "medium" && !played.lockWindow)
    }

    @Test func theAnswerIsTheDocumentedJSON() throws {
        let answer = try NextConversionValue.answer(for: counters(events: ["trial_start": 1]), schema: schema, now: at(hours: 1))
        #expect(answer.json == #"{"conversion_value":10,"coarse_conversion_value":"medium","lock_window":false,"status":"ok","window":1}"#)
    }
}

@Suite struct SchemaRuleTests {
    @Test func thresholdsAndLocksAreChecked() {
        var s = schema
        s.coarseFromFine = .init(medium: 40, high: 30)
        #expect(throws: RequestProblem.self) { try s.check() }
        s.coarseFromFine = nil
        #expect { try s.check() } throws: { ($0 as? RequestProblem)?.field == "schema.lock_at.coarse" }
        s.lockAt = .init(fine: 64)
        #expect { try s.check() } throws: { ($0 as? RequestProblem)?.rule == "out_of_range" }
        s.lockAt = .init(fine: 63)
        #expect(throws: Never.self) { try s.check() }
    }
}
