import Primitives

/// A record's bytes kept apart from the log (in a segment's digest), to be read back by the same
/// decoder as the log's: `u8 kind · u8 tag · u64 id · i64 time · u64 start · u64 end · u32 length ·
/// payload`.
public enum RecordCopy {
    public static func append(_ record: RecordLog.RecordView, to out: inout [UInt8]) {
        out.append(record.kind)
        out.append(record.tag)
        out.appendLE(record.id)
        out.appendLE(record.time.millisecondsSinceEpoch)
        out.appendLE(UInt64(record.start))
        out.appendLE(UInt64(record.end))
        out.appendLE(UInt32(record.payload.count))
        out.append(contentsOf: record.payload)
    }

    /// Shows `visit` each record `bytes[from...]` holds, in order, until `count` of them; returns
    /// where they end, or nil when the bytes are not whole records.
    public static func read(_ bytes: [UInt8], from start: Int, count: Int, _ visit: (RecordLog.RecordView) -> Void) -> Int? {
        var at = start
        for _ in 0..<count {
            guard at + 38 <= bytes.count else { return nil }
            let length = Int(bytes.loadLE(UInt32.self, at: at + 34))
            let recordStart = bytes.loadLE(UInt64.self, at: at + 18), recordEnd = bytes.loadLE(UInt64.self, at: at + 26)
            guard at + 38 + length <= bytes.count, recordStart <= recordEnd, recordEnd <= UInt64(1) << 62 else { return nil }
            bytes.withUnsafeBytes { raw in
                visit(RecordLog.RecordView(kind: bytes[at], tag: bytes[at + 1], id: bytes.loadLE(UInt64.self, at: at + 2),
                                             time: Timestamp(millisecondsSinceEpoch: bytes.loadLE(Int64.self, at: at + 10)),
                                             payload: UnsafeRawBufferPointer(rebasing: raw[(at + 38)..<(at + 38 + length)]),
                                             start: Int(recordStart), end: Int(recordEnd)))
            }
            at += 38 + length
        }
        return at
    }
}
