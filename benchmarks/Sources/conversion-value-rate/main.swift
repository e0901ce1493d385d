import AppDevelopers
import Foundation
import Primitives

// The conversion-value API's own work on one core, without HTTP: reading an app's counters from
// JSON and answering from the demo's schema, as `POST /conversion-value` does for each request.
// Prints {"answers_per_second": …, "microseconds_each": …}. Usage: conversion-value-rate [SECONDS]
let seconds = Double(CommandLine.arguments.dropFirst().first ?? "3") ?? 3
let schema = ConversionValueSchema(
    fine: [.init(from: 0, to: 0, meaning: "installed"),
           .init(from: 1, to: 9, meaning: "levels completed", events: ["level_complete"]),
           .init(from: 10, to: 29, meaning: "trial started", events: ["trial_start"]),
           .init(from: 30, to: 63, meaning: "purchase", revenue: .init(min: 0.99, max: 49.99, currency: "EUR"))],
    coarse: ["low": "installed", "medium": "played", "high": "paid"],
    coarseFromFine: .init(medium: 10, high: 30), lockAt: .init(fine: 63, coarse: "high"))
// The body benchmarks/conversion_values.py sends.
let body = Array(#"{"app_id":6443210987,"first_launch":"2026-11-20T09:00:00Z","conversion_value":3,"coarse_conversion_value":"low","events":{"level_complete":3,"trial_start":1},"revenue":{"EUR":4.99},"idfv":"00000000-0000-0000-0000-000000000000"}"#.utf8)
let now = Timestamp(rfc3339: "2026-11-20T10:00:00Z")!

var answers = 0
var sink = 0
let start = Date()
while Date().timeIntervalSince(start) < seconds {
    for _ in 0..<1000 {
        let counters = try AppCounters.read(try JSONParser().parse(body))
        let answer = try NextConversionValue.answer(for: counters, schema: schema, now: now)
        sink &+= answer.json.utf8.count
    }
    answers += 1000
}
let elapsed = Date().timeIntervalSince(start)
print(#"{"answers_per_second": \#(Int(Double(answers) / elapsed)), "microseconds_each": \#(String(format: "%.2f", elapsed / Double(answers) * 1e6)), "sink": \#(sink % 7)}"#)
