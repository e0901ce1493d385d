import Primitives
import RecordLog

/// A table's own writer of its rows, for a kind exported at the node's full ingest rate: the same
/// bytes its codec's rows give through the table's columns (a test holds the two equal, record by
/// record, on the recorded logs), without building members. A record it does not take (one with
/// fields it does not know) goes through the codec.
public protocol ClickHouseRowEncoder {
    /// Appends the row of `view`, which begins with `prefix` (`{"node":…,"id":`), and writes into
    /// `key` (empty) the record's group in the table's rollup, in a form of the encoder's own:
    /// equal bytes for equal groups, and different bytes for different ones (nothing without a
    /// rollup). False, with `out` as it was, for a record left to the codec.
    mutating func encode(_ view: RecordLog.RecordView, prefix: [UInt8], into out: inout [UInt8], key: inout [UInt8]) -> Bool

    /// A key `encode` wrote, as the rollup's rows write it: `,"name":literal` for each of the
    /// rollup's keys, in order, exactly as the codec's row through the rollup's `key` gives them.
    /// False for bytes that are no key of this encoder's.
    func appendCountLiterals(ofKey key: [UInt8], to out: inout [UInt8]) -> Bool
}

extension ClickHouseRowEncoder {
    /// `,"name":` as the rows write a column's key.
    public static func key(_ name: String) -> [UInt8] { Array(("," + ClickHouseType.quoted(name) + ":").utf8) }

    /// The envelope: id, received_at, received_at_ms, as `RowWriter` writes them.
    public static func appendEnvelope(_ view: RecordLog.RecordView, prefix: [UInt8], to out: inout [UInt8]) {
        out.append(contentsOf: prefix)
        out.appendDecimal(view.id)
        let mark = out.count
        out.append(contentsOf: ",\"received_at\":".utf8)
        if ClickHouseType.appendDateTime(view.time, to: &out) {
            out.append(contentsOf: ",\"received_at_ms\":".utf8)
            out.appendDecimal(view.time.millisecondsSinceEpoch)
        } else {
            out.removeLast(out.count - mark)
        }
    }
}
