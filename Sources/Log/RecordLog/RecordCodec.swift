import Primitives

/// One record as the exports show it: the NDJSON line's members, in order, and the CSV row's
/// cells, one under each of the codec's columns. Both come from one reading of the record.
public struct ExportRow: Sendable {
    public var members: [JSONMember]
    public var cells: [String]

    public init(members: [JSONMember], cells: [String]) {
        self.members = members
        self.cells = cells
    }
}

/// What an owner tells about a kind of record it stores: which kind, and how one of its records
/// becomes an export row. NDJSON, CSV (and whatever export comes next) are written from it, so an
/// owner adds a kind to every export by writing one codec.
public protocol RecordCodec: Sendable {
    var kind: RecordKind { get }
    /// The CSV columns, in order.
    var columns: [String] { get }
    /// A reader for one export's worth of records, in log order: it may keep what it learns
    /// from one record for the next (interned strings). Nil for a record it cannot read.
    func reader() -> (RecordLog.RecordView) -> ExportRow?
}

extension RecordLog {
    /// The rows of `codec`'s kind received in `[since, until)`, oldest first, read lazily from
    /// disk: each call gives the next, nil at the end.
    public func rows(of codec: some RecordCodec, since: Timestamp? = nil, until: Timestamp? = nil,
                     skipping: ((_ segmentBase: Int) -> Int?)? = nil) -> () -> ExportRow? {
        let cursor = records(of: codec.kind, since: since, until: until, skipping: skipping)
        let read = codec.reader()
        return { cursor.next(read) }
    }
}
