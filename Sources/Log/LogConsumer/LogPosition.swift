/// How far a consumer has come through the log for one of its streams (a ClickHouse table, a
/// relay's destination): the offset its next read starts at, a record boundary, and what it has
/// handed on so far.
public struct LogPosition: Codable, Sendable, Equatable {
    public var offset: Int
    /// Records the destination accepted.
    public var records: Int
    /// Records the consumer's codec could not read: counted, logged, never sent.
    public var unreadable: Int

    public init(offset: Int = 0, records: Int = 0, unreadable: Int = 0) {
        self.offset = offset
        self.records = records
        self.unreadable = unreadable
    }

    // "rows": the name the first consumer (ClickHouse) gave it, which cursors on disk carry.
    private enum CodingKeys: String, CodingKey {
        case offset, records = "rows", unreadable
    }

    /// The position after the records up to `end` were taken: `records` handed on, `unreadable` skipped.
    public mutating func advance(to end: Int, records: Int, unreadable: Int) {
        offset = end
        self.records += records
        self.unreadable += unreadable
    }
}
