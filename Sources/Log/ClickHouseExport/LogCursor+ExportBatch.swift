import LogConsumer

extension LogCursor {
    /// The cursor after `batch` was accepted. Saved after every batch ClickHouse accepted and
    /// never before: a crash between the two sends that batch again, which the tables' (node, id)
    /// key makes harmless.
    public mutating func advance(past batch: ExportBatch) {
        var position = self.position(of: batch.table)
        position.advance(to: batch.end, records: batch.rows + batch.skipped, unreadable: batch.unreadable)
        streams[batch.table] = position
    }
}
