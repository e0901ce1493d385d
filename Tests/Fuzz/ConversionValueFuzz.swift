// libFuzzer target over the conversion-value API's rules, built by scripts/fuzz.sh with the
// AppDevelopers sources. An input is either the app's counters alone (answered with the demo's
// schema), or a registration and the counters on the line after it: the registration goes
// through `AppRegistryInput.app` and `ConversionValueSchema.check`, and the counters are
// answered with its schema whether or not the check passed, as an apps.json edited by hand would
// be. Properties, beyond "no crash": a refusal names a snake_case rule; an answer's fine value
// is 0–63 and only in the first window (or before SKAdNetwork 4), its coarse value is low,
// medium or high, its window 1–3 or none. Inputs it found are kept in
// Tests/AppDevelopersTests/Resources/fuzz-fixtures, which the unit tests replay.
import Primitives

private let demoSchema = ConversionValueSchema(
    fine: [.init(from: 0, to: 0, meaning: "installed"),
           .init(from: 1, to: 9, meaning: "levels", events: ["level_complete"]),
           .init(from: 10, to: 29, meaning: "trial", events: ["trial_start"]),
           .init(from: 30, to: 63, meaning: "purchase", revenue: .init(min: 0.99, max: 49.99, currency: "EUR"))],
    coarseFromFine: .init(medium: 10, high: 30), lockAt: .init(fine: 63, coarse: "high"))
private let now = Timestamp(rfc3339: "2026-11-23T00:00:00Z")!

private func snakeCase(_ rule: String) -> Bool {
    !rule.isEmpty && rule.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || $0 == 95 }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConversionValue(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    var schema = demoSchema
    var countersBytes = bytes[...]
    if let newline = bytes.firstIndex(of: 0x0A) {
        guard let registration = try? JSONParser().parse(Array(bytes[..<newline])) else { return 0 }
        countersBytes = bytes[(newline + 1)...]
        do {
            let app = try AppRegistryInput.app(from: registration)
            schema = app.schema
            try schema.check()
        } catch {
            precondition(snakeCase(error.rule), "a registration rule that is not snake_case: \(error.rule)")
        }
    }
    guard let json = try? JSONParser().parse(Array(countersBytes)) else { return 0 }
    let counters: AppCounters
    do { counters = try AppCounters.read(json) } catch {
        precondition(snakeCase(error.rule), "a rule that is not snake_case: \(error.rule)")
        return 0
    }
    do {
        let answer = try NextConversionValue.answer(for: counters, schema: schema, now: now)
        if let fine = answer.conversionValue {
            precondition((0...63).contains(fine), "a fine value of \(fine)")
            precondition(answer.window == 1 || answer.window == nil, "a fine value in window \(answer.window ?? 0)")
        }
        if let coarse = answer.coarseConversionValue { precondition(["low", "medium", "high"].contains(coarse), "coarse \(coarse)") }
        if let window = answer.window { precondition((1...3).contains(window), "window \(window)") }
        _ = schema.meaning(fine: answer.conversionValue ?? 0)
    } catch {
        precondition(error.rule == "time_in_the_future", "an unexpected refusal: \(error.rule)")
    }
    return 0
}
