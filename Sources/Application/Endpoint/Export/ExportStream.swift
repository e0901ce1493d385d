import HTTPServer
import Primitives
import RecordLog

/// Every export's body: rows written as NDJSON lines or CSV rows, a few dozen kilobytes at a
/// time, whatever the rows come from (the log through a kind's `RecordCodec`, or
/// `AppleAdsExport.rows`). The rows are read and written on a `BodyProducers` thread, never on the
/// event loop, and only as fast as the client reads (`BackgroundBodyStream`).
final class ExportStream: @unchecked Sendable {
    enum Format { case ndjson, csv }

    /// Rows a piece looks at, at most, before it gives its thread to another stream: a scoped
    /// export passing over another advertiser's rows still yields.
    static let rowsLookedAtPerPiece = 20_000

    private let format: Format
    private let columns: [String]
    private let nextRow: () -> ExportRow?
    private let shape: ((ExportRow) -> ExportRow?)?
    private var wroteHeader = false

    /// `shape`: a row as the reader is shown it, nil to pass over it (a scoped read's); every row
    /// as it is when nil.
    init(_ format: Format, columns: [String], rows: @escaping () -> ExportRow?, shape: ((ExportRow) -> ExportRow?)? = nil) {
        self.format = format
        self.columns = columns
        self.nextRow = rows
        self.shape = shape
    }

    /// The next piece: nil at the end, empty when it looked at its share of rows and kept none.
    func piece(maxBytes: Int) -> [UInt8]? {
        var text = ""
        if format == .csv && !wroteHeader {
            text = CSV.row(columns)
            wroteHeader = true
        }
        var looked = 0
        // A row is well under the slack, so a piece stays under `maxBytes`.
        while text.utf8.count < maxBytes - 4096 {
            guard looked < Self.rowsLookedAtPerPiece else { return Array(text.utf8) }
            guard var row = nextRow() else { return text.isEmpty ? nil : Array(text.utf8) }
            looked += 1
            if let shape {
                guard let shown = shape(row) else { continue }
                row = shown
            }
            switch format {
            case .ndjson:
                JSONValue.object(row.members).write(to: &text)
                text += "\n"
            case .csv:
                text += CSV.row(row.cells)
            }
        }
        return Array(text.utf8)
    }

    /// The answer that streams it, made by `producers`: NDJSON, or CSV to be saved under
    /// `fileName`. Refused with 503 `exports_busy` while as many exports as the producers take
    /// are open.
    func response(fileName: String, producers: BodyProducers) throws(Problem) -> HTTPResponse {
        guard let stream = producers.stream({ [self] in piece(maxBytes: $0) }) else {
            throw Problem(status: 503, rule: "exports_busy",
                          detail: "\(producers.maxStreams) exports are being streamed; try again when one has finished")
        }
        switch format {
        case .ndjson:
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"], stream: stream)
        case .csv:
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                       "Content-Disposition": "attachment; filename=\"\(fileName).csv\""], stream: stream)
        }
    }
}
