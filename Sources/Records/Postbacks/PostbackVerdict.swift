/// Whether a stored postback counts, and why not. Every postback is stored; a quarantined one is
/// kept out of the Apps view's counts and listed with its reasons.
public enum PostbackVerdict: UInt8, Sendable {
    case accepted = 1
    case quarantined = 2

    public var name: String { self == .accepted ? "accepted" : "quarantined" }

    /// Reasons that are said but do not quarantine: the postback may be true, only this endpoint
    /// cannot check it.
    public static let notes: Set<String> = ["signature_unverifiable"]

    /// The verdict and all its reasons: the fields' rules, then what the signature says, then
    /// whether an earlier delivery of the same postback said something else.
    public static func judge(_ postback: Postback, signature: PostbackKeyring.Check, developmentMode: Bool,
                             conflictsWithEarlier: Bool) -> (verdict: PostbackVerdict, reasons: [String]) {
        var reasons = postback.reasons
        switch signature.outcome {
        case .invalid: reasons.append("signature_invalid")
        case .unverifiable: reasons.append("signature_unverifiable")
        case .appleDevelopment where !developmentMode: reasons.append("development_postback")
        case .apple, .appleDevelopment, .testKey: break
        }
        if conflictsWithEarlier { reasons.append("conflicting_duplicate") }
        let counts = reasons.allSatisfy { notes.contains($0) }
        return (counts ? .accepted : .quarantined, reasons)
    }
}
