import HTTPServer
import Primitives
import ReportStore

/// Every export's body: rows written as NDJSON lines or CSV rows as the socket drains, a few
/// dozen kilobytes at a time, whatever the rows come from (the log through a kind's
/// `RecordCodec`, or `AppleAdsExport.rows`).
final class ExportStream: HTTPBodyStream, @unchecked Sendable {
    enum Format { case ndjson, csv }

    private let format: Format
    private let columns: [String]
    private let nextRow: () -> ExportRow?
    private var wroteHeader = false

    init(_ format: Format, columns: [String], rows: @escaping () -> ExportRow?) {
        self.format = format
        self.columns = columns
        self.nextRow = rows
    }

    func next(maxBytes: Int) -> [UInt8]? {
        var text = ""
        if format == .csv && !wroteHeader {
            text = columns.joined(separator: ",") + "\r\n"
            wroteHeader = true
        }
        // A row is well under the slack, so a piece stays under `maxBytes`.
        while text.utf8.count < maxBytes - 4096, let row = nextRow() {
            switch format {
            case .ndjson:
                JSONValue.object(row.members).write(to: &text)
                text += "\n"
            case .csv:
                text += CSV.row(row.cells)
            }
        }
        return text.isEmpty ? nil : Array(text.utf8)
    }

    /// The answer that streams it: NDJSON, or CSV to be saved under `fileName`.
    func response(fileName: String) -> HTTPResponse {
        switch format {
        case .ndjson:
            HTTPResponse(status: 200, headers: ["Content-Type": "application/x-ndjson", "Cache-Control": "no-store"], stream: self)
        case .csv:
            HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                                "Content-Disposition": "attachment; filename=\"\(fileName).csv\""], stream: self)
        }
    }
}
