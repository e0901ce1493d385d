import PCM
import Primitives
import HTTPServer
import RecordLog

/// An RFC 9457 problem: what went wrong, for whom to fix, as `application/problem+json`.
///
/// `type` is a URN per rule (they are listed in docs/PROBLEMS.md); `field` and `rule` are
/// extension members so that a client can act without parsing `detail`.
struct Problem: Error, Sendable {
    var status: Int
    var rule: String
    var field: String?
    var detail: String

    init(status: Int, rule: String, field: String? = nil, detail: String) {
        self.status = status
        self.rule = rule
        self.field = field
        self.detail = detail
    }

    init(_ rejection: ReportRejection) {
        self.init(status: rejection.rule.httpStatus, rule: rejection.rule.rawValue, field: rejection.field,
                  detail: rejection.detail)
    }

    var response: HTTPResponse {
        var json = "{\"type\":\"urn:attribution-endpoint:problem:\(rule)\",\"title\":"
        JSONValue.writeString(Self.title(rule), to: &json)
        json += ",\"status\":\(status),\"detail\":"
        JSONValue.writeString(detail, to: &json)
        json += ",\"rule\":\"\(rule)\""
        if let field {
            json += ",\"field\":"
            JSONValue.writeString(field, to: &json)
        }
        json += "}\n"
        var headers: HTTPHeaders = ["Content-Type": "application/problem+json", "Cache-Control": "no-store"]
        if status == 401 { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"attribution-endpoint\"") }
        if status == 503 { headers.add(name: "Retry-After", value: "5") }
        var response = HTTPResponse(status: status, headers: headers, body: Array(json.utf8))
        response.logNote = rule
        return response
    }

    static func title(_ rule: String) -> String {
        let words = rule.split(separator: "_").joined(separator: " ")
        return words.prefix(1).uppercased() + words.dropFirst()
    }
}

extension Problem {
    /// 405 with the `Allow` header listing what the path takes.
    static func methodNotAllowed(_ request: HTTPRequest, allow: String) -> HTTPResponse {
        var response = Problem(status: 405, rule: "method_not_allowed", detail: "\(request.method) is not allowed here; use \(allow)").response
        response.headers.add(name: "Allow", value: allow)
        return response
    }

    init(_ problem: RequestProblem) {
        let status = switch problem.kind {
        case .malformed: 400
        case .invalid: 422
        case .conflict: 409
        case .notFound: 404
        case .unavailable: 503
        }
        self.init(status: status, rule: problem.rule, field: problem.field, detail: problem.detail)
    }

    /// 503 when the log cannot be written: `disk_full` when freeing disk is the fix.
    /// `what` finishes "… could not be stored", e.g. "the report".
    static func storeFailed(_ error: StoreError, _ what: String) -> Problem {
        Problem(status: 503, rule: error.isDiskFull ? "disk_full" : "store_unavailable", detail: "\(what): \(error)")
    }

    static func notFound(_ path: Substring) -> Problem {
        Problem(status: 404, rule: "not_found", detail: "no resource at \(path)")
    }

    static let unauthorized = Problem(status: 401, rule: "unauthorized",
        detail: "send Authorization: Bearer <token>; the token is in the data directory's admin-token file unless configured")
}

extension ReportRejection.Rule {
    /// The rules say what failed; which HTTP status that is, is the endpoint's business.
    var httpStatus: Int {
        switch self {
        case .siteNotServed: 421
        case .malformedJSON, .invalidUTF8, .tooDeep, .duplicateKey, .notAnObject: 400
        default: 422
        }
    }
}
