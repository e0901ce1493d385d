import Testing
import Primitives
@testable import Endpoint

/// A day's conversion rows, packed once the day is over, count what a dictionary would, whatever
/// the numbers and however often the day is counted into again.
struct ConversionTableTests {
    @Test func packedRowsCountWhatADictionaryWould() {
        var generator = SystemRandomNumberGenerator()
        let extremes: [UInt32] = [0, 1, 127, 128, 16_383, 16_384, UInt32.max - 1, UInt32.max]
        func number() -> UInt32 {
            Bool.random(using: &generator) ? extremes.randomElement(using: &generator)! : UInt32.random(in: 0...40, using: &generator)
        }
        var table = ConversionTable()
        var model: [ConversionTable.Key: (UInt32, UInt32, UInt32, UInt32)] = [:]
        for round in 0..<6 {
            for _ in 0..<2_000 {
                let key = ConversionTable.Key(network: number(), campaign: number(), app: number(), value: number() % 70)
                let counts = AppsSummary.ConversionCounts(installs: Int(number() % 1_000), redownloads: round, reEngagements: Int(number()),
                                                          postbacks: Int(number()))
                table.add(key, ConversionTable.Counts(counts))
                var sum = model[key, default: (0, 0, 0, 0)]
                sum = (sum.0 +| UInt32(counts.installs), sum.1 +| UInt32(counts.redownloads), sum.2 +| UInt32(counts.reEngagements),
                       sum.3 +| UInt32(counts.postbacks))
                model[key] = sum
            }
            // Frozen after some rounds, counted into again after others: both read the same.
            if round % 2 == 0 { table.freeze() }
            var read: [ConversionTable.Key: (UInt32, UInt32, UInt32, UInt32)] = [:]
            table.forEach { key, counts in
                var sum = read[key, default: (0, 0, 0, 0)]
                sum = (sum.0 +| counts.installs, sum.1 +| counts.redownloads, sum.2 +| counts.reEngagements, sum.3 +| counts.postbacks)
                read[key] = sum
            }
            #expect(read.count == model.count, "round \(round)")
            #expect(read.allSatisfy { key, sum in model[key].map { $0 == sum } ?? false }, "round \(round)")
        }
        table.freeze()
        #expect(table.rows == model.count)
        // Packed: well under the 24 bytes a row took in memory, even with numbers this spread.
        #expect(table.bytes < model.count * 24)
    }
}
