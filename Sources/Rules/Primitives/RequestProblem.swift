/// Why a site owner's request (a registration, a pixel hit, a trigger) was refused, naming the
/// field and the rule; the endpoint answers it as problem+json, with the status its kind maps to.
public struct RequestProblem: Error, Sendable, Equatable {
    /// What kind of failure it is; the endpoint, not the rules, knows the HTTP status for each.
    public enum Kind: Sendable, Equatable {
        /// The request cannot be read: not JSON, not an object, a malformed path.
        case malformed
        /// Readable, but a value breaks a rule.
        case invalid
        /// Valid alone, but clashes with what is registered.
        case conflict
        /// Names something that is not registered.
        case notFound
        /// Valid, but could not be kept (the disk refused it): try again.
        case unavailable
    }

    public var kind: Kind
    public var rule: String
    public var field: String?
    public var detail: String

    public init(_ kind: Kind, rule: String, field: String?, detail: String) {
        self.kind = kind
        self.rule = rule
        self.field = field
        self.detail = detail
    }

    public static func invalid(_ field: String, _ rule: String, _ detail: String) -> RequestProblem {
        RequestProblem(.invalid, rule: rule, field: field, detail: "\(field) \(detail)")
    }
}

extension RequestProblem {
    /// A body that is not JSON, refused with the same rule on every path as on the report path,
    /// so that a client learns which of the four it was: `malformed_json` (syntax, lone
    /// surrogates included), `duplicate_key`, `too_deep` or `invalid_utf8`.
    public init(_ failure: JSONParser.Failure) {
        let rule = switch failure.kind {
        case .syntax: "malformed_json"
        case .duplicateKey: "duplicate_key"
        case .tooDeep: "too_deep"
        case .invalidUTF8: "invalid_utf8"
        }
        var field: String?
        if case .duplicateKey(let key) = failure.kind { field = key }
        self.init(.malformed, rule: rule, field: field, detail: "the body is not valid JSON: \(failure.description)")
    }
}

extension JSONParser {
    /// Parses a request's body, refusing it as `RequestProblem(failure)` says.
    public func parseBody(_ bytes: [UInt8]) throws(RequestProblem) -> JSONValue {
        do {
            return try parse(bytes)
        } catch {
            throw RequestProblem(error)
        }
    }
}
