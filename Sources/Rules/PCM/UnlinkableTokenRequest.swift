import Primitives

/// What a browser sends to `sign-unlinkable-token/`: a nonce and a blinded token for the source
/// site at click time, or for the destination site at conversion time (iOS 15.4 and later):
/// `{"source_engagement_type":"click","source_nonce":…,"source_unlinkable_token":…,"version":3}`,
/// or with `destination_nonce` and `destination_unlinkable_token`.
///
/// Only the shape is checked here; whether the blinded message is below the site's modulus is
/// known only to the key that signs it.
public struct UnlinkableTokenRequest: Sendable, Equatable {
    public enum Side: String, Sendable {
        case source, destination
    }

    public let side: Side
    /// 16 bytes, never kept: it only shows that the browser's link or redirect carried one.
    public let nonce: [UInt8]
    /// The blinded message, as many bytes as the key's modulus.
    public let blindedMessage: [UInt8]

    public static let nonceBytes = 16
    /// RSA-4096.
    public static let blindedMessageBytes = 512

    public static func read(_ body: [UInt8]) -> Result<UnlinkableTokenRequest, RequestProblem> {
        let members: [JSONMember]
        do throws(RequestProblem) {
            guard case .object(let m) = try JSONParser().parseBody(body) else {
                return .failure(RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object"))
            }
            members = m
        } catch {
            return .failure(error)
        }
        let fields = FieldReader(members)
        switch fields.value("version") {
        case .number("3"): break
        case nil: return .failure(.invalid("version", "missing_field", "is required (3)"))
        case let other?: return .failure(.invalid("version", "unsupported_version", "must be 3, got \(other.serialized())"))
        }
        // The destination's request may carry the click's engagement type too; either way it is a click.
        switch fields.value("source_engagement_type") {
        case .string("click"): break
        case nil where fields.has("destination_nonce"): break
        case nil: return .failure(.invalid("source_engagement_type", "missing_field", "is required (\"click\")"))
        case let other?:
            return .failure(.invalid("source_engagement_type", "unsupported_engagement_type", "must be \"click\", got \(other.serialized())"))
        }
        let side: Side
        switch (fields.has("source_nonce") || fields.has("source_unlinkable_token"),
                fields.has("destination_nonce") || fields.has("destination_unlinkable_token")) {
        case (true, false): side = .source
        case (false, true): side = .destination
        case (true, true):
            return .failure(RequestProblem(.invalid, rule: "both_sides", field: "destination_nonce",
                                           detail: "a request is for the source or for the destination, not both"))
        case (false, false): return .failure(.invalid("source_nonce", "missing_field", "is required (or destination_nonce)"))
        }
        let nonceField = side.rawValue + "_nonce", tokenField = side.rawValue + "_unlinkable_token"
        guard case .string(let nonceText)? = fields.value(nonceField) else {
            return .failure(.invalid(nonceField, fields.has(nonceField) ? "invalid_nonce" : "missing_field",
                                     fields.has(nonceField) ? "must be a string" : "is required"))
        }
        guard Base64URL.isValidUnpadded(nonceText), let nonce = Base64.decode(nonceText, urlSafe: true), nonce.count == nonceBytes else {
            return .failure(.invalid(nonceField, "invalid_nonce", "must be base64url without padding of \(nonceBytes) bytes"))
        }
        guard case .string(let tokenText)? = fields.value(tokenField) else {
            return .failure(.invalid(tokenField, fields.has(tokenField) ? "invalid_unlinkable_token" : "missing_field",
                                     fields.has(tokenField) ? "must be a string" : "is required"))
        }
        guard Base64URL.isValidUnpadded(tokenText), let blinded = Base64.decode(tokenText, urlSafe: true) else {
            return .failure(.invalid(tokenField, "invalid_unlinkable_token", "must be base64url without padding"))
        }
        guard blinded.count == blindedMessageBytes else {
            return .failure(.invalid(tokenField, "wrong_token_length",
                                     "must be \(blindedMessageBytes) bytes (an RSA-4096 blinded message), got \(blinded.count)"))
        }
        return .success(UnlinkableTokenRequest(side: side, nonce: nonce, blindedMessage: blinded))
    }
}
