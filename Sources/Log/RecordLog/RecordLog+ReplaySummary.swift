
extension RecordLog {
    public struct ReplaySummary: Sendable {
        /// Whole records in the kept segments, of every kind.
        public var records: Int
        /// Of each kind, by the kind's number.
        let counts: [Int]
        /// Offsets and lengths of damaged records that were skipped.
        public var corruptRecords: [(offset: Int, length: Int)]
        /// Bytes of an incomplete last record that were cut off.
        public var tornTailBytes: Int
        public var seconds: Double
        /// The log's first `fingerprintAt` bytes (the `init` argument) as replay found them, or
        /// nil if no record ends exactly there.
        public var prefixAtFingerprint: LogPrefix?
        /// Records read from the segments; the others were taken from sealed segments' indexes.
        public var recordsRead: Int
        /// Where the oldest kept segment starts: what the log held before it was removed.
        public var start: Int

        /// Whole records of `kind` found.
        public func count(of kind: RecordKind) -> Int { counts[Int(kind.number)] }
    }

}
