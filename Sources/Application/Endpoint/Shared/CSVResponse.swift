import HTTPServer

/// The one way the endpoint answers with a CSV file (RFC 4180, with a header row): never cached,
/// and saved under `name`.csv by a browser.
enum CSVResponse {
    static func make(_ text: String, name: String = "summary") -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "text/csv; charset=utf-8; header=present", "Cache-Control": "no-store",
                                           "Content-Disposition": "attachment; filename=\"\(name).csv\""], body: Array(text.utf8))
    }
}
