import HTTPServer
import Primitives

/// `?app_id=` as the API takes it: the App Store id written in digits (so that `+42`, `042` and
/// `-0` name nothing by accident), positive; any parameter but those named is refused.
enum RequestedAppID {
    /// The id; a request without one is refused.
    static func required(_ request: HTTPRequest) throws(Problem) -> Int {
        guard let id = try parse(request) else {
            throw Problem(status: 400, rule: "missing_parameter", field: "app_id", detail: "name the app: ?app_id=")
        }
        return id
    }

    /// The id, or nil when it is absent.
    static func parse(_ request: HTTPRequest, alsoTaking others: Set<String> = []) throws(Problem) -> Int? {
        for item in request.queryItems where item.name != "app_id" && !others.contains(item.name) {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "\(request.path) takes only ?app_id=…")
        }
        guard let text = request.queryItems.first(where: { $0.name == "app_id" })?.value else { return nil }
        guard JSONValue.isIntegerLiteral(text), let id = JSONValue.integerValue(text), id > 0 else {
            throw Problem(status: 400, rule: "invalid_parameter", field: "app_id", detail: "app_id must be a positive integer; got \"\(text.prefix(30))\"")
        }
        return id
    }
}
