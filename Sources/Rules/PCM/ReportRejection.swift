
/// Why a request cannot be stored as a report: the field at fault, the rule it broke, and a
/// sentence for the site owner. The HTTP layer turns it into `application/problem+json`.
public struct ReportRejection: Error, Sendable, Equatable {
    /// A stable machine name; the rejection counters and `docs/PROBLEMS.md` use it.
    public var rule: Rule
    /// The wire name of the offending field, when one is at fault.
    public var field: String?
    public var detail: String

    public init(_ rule: Rule, field: String? = nil, _ detail: String) {
        self.rule = rule
        self.field = field
        self.detail = detail
    }

    public enum Rule: String, Sendable, CaseIterable {
        // Where the report was sent.
        case siteNotServed = "site_not_served"
        case siteMismatch = "site_mismatch"
        // The body's JSON.
        case malformedJSON = "malformed_json"
        case invalidUTF8 = "invalid_utf8"
        case tooDeep = "too_deep"
        case duplicateKey = "duplicate_key"
        case notAnObject = "not_an_object"
        case mixedKeyForms = "mixed_key_forms"
        // The report's fields.
        case missingField = "missing_field"
        case wrongType = "wrong_type"
        case outOfRange = "out_of_range"
        case unsupportedVersion = "unsupported_version"
        case notClick = "not_click"
        case notRegistrableDomain = "not_registrable_domain"
        case sameSite = "same_site"
        case unpairedToken = "unpaired_token"
        case invalidBase64URL = "invalid_base64url"
    }
}
