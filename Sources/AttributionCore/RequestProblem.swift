/// Why a site owner's request (a registration, a pixel hit, a trigger) was refused, naming the
/// field and the rule; the endpoint answers it as problem+json.
public struct RequestProblem: Error, Sendable, Equatable {
    public var status: Int
    public var rule: String
    public var field: String?
    public var detail: String

    public init(status: Int, rule: String, field: String?, detail: String) {
        self.status = status
        self.rule = rule
        self.field = field
        self.detail = detail
    }

    static func invalid(_ field: String, _ rule: String, _ detail: String) -> RequestProblem {
        RequestProblem(status: 422, rule: rule, field: field, detail: "\(field) \(detail)")
    }
}
