import Foundation
import HTTPServer

/// The one way the endpoint answers with JSON it wrote itself: `application/json`, never cached.
/// (Problems have their own type, `Problem`; the report and postback acknowledgements write
/// their bytes directly, with these headers.)
enum JSONResponse {
    static let headers: HTTPHeaders = ["Content-Type": "application/json", "Cache-Control": "no-store"]

    /// `json` is a complete JSON text; a newline is added.
    static func make(_ status: Int, _ json: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: Array((json + "\n").utf8))
    }

    /// A registration as JSON: keys sorted, slashes as they are.
    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    /// `json` (an object) with `"scope"`, `"cluster_available"` and `"records_kept_from"` first:
    /// which numbers the page shows, whether it can switch, and from which day records can still
    /// be exported one by one (null: every day; ClickHouse keeps every record). Every node's
    /// numbers also carry `"nodes"`, each node's last export (`ClusterNodes`).
    static func scoped(_ scope: String, available: Bool, recordsKeptFrom: String? = nil, nodes: String? = nil, _ json: String) -> String {
        let kept = recordsKeptFrom.map { "\"\($0)\"" } ?? "null"
        return "{\"scope\":\"\(scope)\",\"cluster_available\":\(available),\"records_kept_from\":\(kept),"
            + (nodes.map { "\"nodes\":\($0)," } ?? "") + json.dropFirst()
    }
}
