import CSystemShims

/// CRC-32C (Castagnoli). Each log record carries one, so a torn or bit-flipped record is
/// recognised on replay instead of being served.
///
/// The CPU's CRC-32C instruction does it where there is one (x86-64 with SSE4.2; arm64 built for a
/// CPU with it, as every Apple one is): a start checks every record of the log, 2 GB for 10 M
/// reports, and the tables below took about 3 s of that on the benchmark machine. The tables
/// (slicing-by-8) remain for other CPUs, and are what the tests hold the instruction to.
public enum CRC32C {
    /// Read once: whether `checksum` uses the instruction.
    public static let usesCPUInstruction = c_system_shims_crc32c_available() != 0

    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][i] = crc
        }
        for i in 0..<256 {
            for t in 1..<8 { tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][Int(tables[t - 1][i] & 0xFF)] }
        }
        return tables
    }()
    private static let flat: [UInt32] = tables.flatMap { $0 }

    public static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        guard usesCPUInstruction else { return tableChecksum(bytes, seed: seed) }
        guard let base = bytes.baseAddress else { return seed }
        return ~c_system_shims_crc32c_update(~seed, base, bytes.count)
    }

    /// The same, from the tables alone.
    public static func tableChecksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        flat.withUnsafeBufferPointer { t in
            guard let base = bytes.baseAddress else { return }
            var q = base.assumingMemoryBound(to: UInt8.self)
            var n = bytes.count
            while n >= 8 {
                let lo = UInt32(q[0]) | UInt32(q[1]) << 8 | UInt32(q[2]) << 16 | UInt32(q[3]) << 24
                let one = crc ^ lo
                crc = t[7 * 256 + Int(one & 0xFF)] ^ t[6 * 256 + Int((one >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((one >> 16) & 0xFF)] ^ t[4 * 256 + Int(one >> 24)]
                    ^ t[3 * 256 + Int(q[4])] ^ t[2 * 256 + Int(q[5])] ^ t[1 * 256 + Int(q[6])] ^ t[Int(q[7])]
                q += 8
                n -= 8
            }
            while n > 0 {
                crc = t[Int((crc ^ UInt32(q[0])) & 0xFF)] ^ (crc >> 8)
                q += 1
                n -= 1
            }
        }
        return ~crc
    }

    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
