import Primitives

extension RecordLog {
    /// A record as replay and scans see it. `payload` is the owner's bytes, valid during the call.
    public struct RecordView {
        public var kind: UInt8
        public var tag: UInt8
        public var id: UInt64
        public var time: Timestamp
        public var payload: UnsafeRawBufferPointer
        /// Where the record begins in the log: what `record(startingAt:_:)` reads it back from.
        public var start: Int
        public var end: Int

        /// A record as an owner kept it elsewhere (a segment's digest), to be read by the same
        /// decoder as the log's.
        public init(kind: UInt8, tag: UInt8, id: UInt64, time: Timestamp, payload: UnsafeRawBufferPointer, start: Int, end: Int) {
            self.kind = kind
            self.tag = tag
            self.id = id
            self.time = time
            self.payload = payload
            self.start = start
            self.end = end
        }
    }

}

extension RecordLog.RecordView {
    /// The view of a record's payload; nil if it is too short to hold the store's envelope.
    init?(kind: UInt8, tag: UInt8, payload: UnsafeRawBufferPointer, start: Int = 0, end: Int) {
        guard payload.count >= RecordLog.envelopeSize else { return nil }
        self.init(kind: kind, tag: tag, id: payload.loadLE(UInt64.self, at: 0),
                  time: Timestamp(millisecondsSinceEpoch: payload.loadLE(Int64.self, at: 8)),
                  payload: UnsafeRawBufferPointer(rebasing: payload[RecordLog.envelopeSize...]), start: start, end: end)
    }
}
