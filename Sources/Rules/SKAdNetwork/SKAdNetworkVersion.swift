/// What each SKAdNetwork version puts in a postback and which of it Apple signs
/// (PROTOCOLS.md §3, from Apple's "Verifying an install-validation postback").
public enum SKAdNetworkVersion: String, Sendable, CaseIterable {
    case v1_0 = "1.0"
    case v2_0 = "2.0"
    case v2_1 = "2.1"
    case v2_2 = "2.2"
    case v3_0 = "3.0"
    case v4_0 = "4.0"

    /// The curve of Apple's key for this version. 1.0 and 2.0 were signed with P-192, which
    /// swift-crypto does not offer: their signatures are stored as not checkable.
    public var isSignedWithP256: Bool { self != .v1_0 && self != .v2_0 }

    /// The signed fields, in order. An optional one (`[x]` in Apple's table) is left out of the
    /// message when absent, not written empty; `source-app-id or source-domain` is whichever came.
    public var signedFields: [SignedField] {
        switch self {
        case .v4_0: Self.fields4_0
        case .v3_0: Self.fields3_0
        case .v2_2: Self.fields2_2
        case .v2_0, .v2_1: Self.fields2_0
        case .v1_0: Self.fields1_0
        }
    }

    // Built once: every postback's signed message is assembled from one of these.
    private static let fields4_0: [SignedField] = [
        .always("version"), .always("ad-network-id"), .always("source-identifier"), .always("app-id"),
        .always("transaction-id"), .always("redownload"), .ifPresent(["source-app-id", "source-domain"]),
        .always("fidelity-type"), .always("did-win"), .always("postback-sequence-index")]
    private static let fields3_0: [SignedField] = [
        .always("version"), .always("ad-network-id"), .always("campaign-id"), .always("app-id"),
        .always("transaction-id"), .always("redownload"), .ifPresent(["source-app-id"]),
        .always("fidelity-type"), .always("did-win")]
    private static let fields2_2: [SignedField] = [
        .always("version"), .always("ad-network-id"), .always("campaign-id"), .always("app-id"),
        .always("transaction-id"), .always("redownload"), .ifPresent(["source-app-id"]), .always("fidelity-type")]
    private static let fields2_0: [SignedField] = [
        .always("version"), .always("ad-network-id"), .always("campaign-id"), .always("app-id"),
        .always("transaction-id"), .always("redownload"), .ifPresent(["source-app-id"])]
    private static let fields1_0: [SignedField] = [
        .always("ad-network-id"), .always("campaign-id"), .always("app-id"), .always("transaction-id")]

    public enum SignedField: Sendable, Equatable {
        /// Required: its absence is a reason of its own (`<field>_missing`).
        case always(String)
        /// The first of these that is present, or nothing.
        case ifPresent([String])
    }

    /// Fields this version does not have; one that arrives anyway is a reason
    /// (`<field>_not_in_version`), since its presence says the postback is not what it claims.
    public var absentFields: [String] {
        switch self {
        case .v4_0: ["campaign-id"]
        case .v3_0: ["source-identifier", "source-domain", "coarse-conversion-value", "postback-sequence-index"]
        case .v2_2: ["source-identifier", "source-domain", "coarse-conversion-value", "postback-sequence-index", "did-win"]
        case .v2_0, .v2_1:
            ["source-identifier", "source-domain", "coarse-conversion-value", "postback-sequence-index", "did-win", "fidelity-type"]
        case .v1_0:
            ["source-identifier", "source-domain", "coarse-conversion-value", "postback-sequence-index", "did-win",
             "fidelity-type", "redownload", "source-app-id"]
        }
    }
}
