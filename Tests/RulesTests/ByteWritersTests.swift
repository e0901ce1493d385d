import Testing
@testable import Primitives

/// The writers the export uses at full ingest rate give exactly what the String-making ways give.
@Suite struct ByteWritersTests {
    @Test func decimalDigitsAreStringsDigitsAtEveryExtreme() {
        var unsigned: [UInt64] = [0, 1, 9, 10, 99, 100, 255, 256, 999_999, 1_000_000, UInt64(Int64.max), UInt64.max - 1, UInt64.max]
        var signed: [Int64] = [0, -1, 1, -9, -10, Int64.min, Int64.min + 1, Int64.max, -1_793_622_530_475, 1_793_622_530_475]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            unsigned.append(UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64.random(in: 0...63, using: &generator))
            signed.append(Int64.random(in: Int64.min...Int64.max, using: &generator) >> Int64.random(in: 0...63, using: &generator))
        }
        for value in unsigned {
            var out: [UInt8] = [7]
            out.appendDecimal(value)
            #expect(out == [7] + Array(String(value).utf8))
        }
        for value in signed {
            var out: [UInt8] = []
            out.appendDecimal(value)
            #expect(out == Array(String(value).utf8))
        }
    }

    @Test func aStringWrittenFromItsBytesIsTheStringWritten() {
        let samples: [[UInt8]] = [
            [], Array("late".utf8), Array("Winter \"sale\"\n\t\r\\".utf8), [0x00, 0x01, 0x1F, 0x20, 0x7F],
            Array("Ünïcode ✓ 🎉".utf8),
            // Not UTF-8: a lone continuation byte, a cut sequence, an overlong form, a surrogate.
            [0x61, 0x80, 0x62], [0xE2, 0x9C], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xFF, 0xFE, 0x22, 0x5C],
        ]
        for bytes in samples {
            var expected: [UInt8] = []
            JSONValue.writeString(String(decoding: bytes, as: UTF8.self), to: &expected)
            var written: [UInt8] = []
            bytes.withUnsafeBytes { JSONValue.writeString(utf8: $0, to: &written) }
            #expect(written == expected, "\(bytes)")
            // In pieces: a string written in two halves is the whole string written.
            let half = bytes.count / 2
            guard bytes.allSatisfy({ $0 < 0x80 }) else { continue }
            var pieces: [UInt8] = [UInt8(ascii: "\"")]
            bytes[..<half].withUnsafeBytes { JSONValue.writeStringContent(utf8: $0, to: &pieces) }
            bytes[half...].withUnsafeBytes { JSONValue.writeStringContent(utf8: $0, to: &pieces) }
            pieces.append(UInt8(ascii: "\""))
            #expect(pieces == expected)
        }
    }

    @Test func aByteWriterWritesWhatFitsAndSaysWhenSomethingDidNot() {
        var memory = [UInt8](repeating: 0, count: 27)
        memory.withUnsafeMutableBytes { m in
            var w = ByteWriter(m)
            w.put(#"{"id":"#)
            w.putDecimal(UInt64.max)
            w.put(UInt8(ascii: "}"))
            #expect(!w.overflowed)
            #expect(Array(w.written) == Array(#"{"id":18446744073709551615}"#.utf8))
            #expect(w.count == 27)
            w.put(UInt8(ascii: "x"))
            #expect(w.overflowed && w.count == 27)
        }
        memory.withUnsafeMutableBytes { m in
            var w = ByteWriter(m)
            w.putDecimal(Int64.min)
            #expect(Array(w.written) == Array(String(Int64.min).utf8))
            w.put(#"a literal longer than what is left"#)
            #expect(w.overflowed && Array(w.written) == Array(String(Int64.min).utf8))
            w.put(UInt8(ascii: "x"))
            #expect(w.count == 20)
        }
    }
}
