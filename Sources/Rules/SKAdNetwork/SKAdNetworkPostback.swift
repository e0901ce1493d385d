import Primitives

/// One SKAdNetwork install-validation postback copy, read from its JSON: the fields, every rule
/// they break (each one a quarantine reason), and the message Apple's signature covers.
///
/// Reading never refuses what could be a postback. Only a body with no `ad-network-id`,
/// `transaction-id` or `attribution-signature` string is refused (a device would retry it in
/// vain, and nothing could be learned from it); everything else is kept, and what is wrong with
/// it is listed in `reasons`.
public struct SKAdNetworkPostback: Sendable, Equatable {
    /// As sent; `1.0` when absent (1.0 had no version field).
    public var version: String
    /// The version, if it is one this endpoint knows.
    public var knownVersion: SKAdNetworkVersion?
    public var adNetworkID: String
    public var transactionID: String
    /// Base64 of the DER ECDSA signature, as sent.
    public var attributionSignature: String
    public var campaignID: Int?
    public var sourceIdentifier: String?
    public var appID: Int?
    public var redownload: Bool?
    public var sourceAppID: Int?
    public var sourceDomain: String?
    public var fidelityType: Int?
    public var conversionValue: Int?
    public var coarseConversionValue: String?
    public var didWin: Bool?
    public var postbackSequenceIndex: Int?
    public var countryCode: String?
    /// Every rule broken, in snake_case; empty for a postback that may be counted.
    public var reasons: [String]
    /// UTF-8 of the signed values joined by U+2063, in the version's order.
    public var signedMessage: [UInt8]
    /// Devices resend a postback until they get a 200: ad network, transaction and sequence
    /// index name one postback, however often it arrives. Before 4.0 there is one postback per
    /// install, index 0.
    public var duplicateKey: String

    public static let coarseValues = ["low", "medium", "high"]
    /// The separator Apple joins the signed values with, INVISIBLE SEPARATOR.
    public static let separator = "\u{2063}"

    /// Reads a parsed body. A refusal names the field that makes it impossible to be a postback.
    public static func read(_ body: JSONValue) -> Result<SKAdNetworkPostback, RequestProblem> {
        guard case .object(let members) = body else {
            return .failure(RequestProblem(.malformed, rule: "not_an_object", field: nil,
                                           detail: "a postback is a JSON object; got \(body.typeName)"))
        }
        var r = FieldReader(members)
        var required: [String] = []
        for key in ["ad-network-id", "transaction-id", "attribution-signature"] {
            guard case .string(let text) = r.value(key) else {
                let got = r.value(key).map { "a \($0.typeName)" } ?? "nothing"
                return .failure(RequestProblem(.malformed, rule: "not_a_postback", field: key,
                                               detail: "an SKAdNetwork postback has a string \(key); got \(got)"))
            }
            required.append(text)
        }
        let version = r.has("version") ? r.string("version") ?? "" : "1.0"
        let known = SKAdNetworkVersion(rawValue: version)
        var p = SKAdNetworkPostback(
            version: version, knownVersion: known, adNetworkID: required[0], transactionID: required[1],
            attributionSignature: required[2], reasons: [], signedMessage: [],
            duplicateKey: duplicateKey(adNetworkID: required[0], transactionID: required[1],
                                       sequenceIndex: r.signedText("postback-sequence-index") ?? "0"))
        p.campaignID = r.integer("campaign-id", in: 1...100, required: known.map { $0 != .v4_0 } ?? false)
        p.sourceIdentifier = r.digits("source-identifier", count: 2...4, required: known == .v4_0)
        p.appID = r.integer("app-id", in: 0...Int.max, required: true)
        p.redownload = r.bool("redownload", required: known.map { $0 != .v1_0 } ?? false)
        p.sourceAppID = r.integer("source-app-id", in: 0...Int.max)
        p.sourceDomain = r.string("source-domain")
        let since2_2 = known == .v2_2 || known == .v3_0 || known == .v4_0
        p.fidelityType = r.integer("fidelity-type", in: 0...1, required: since2_2)
        p.conversionValue = r.integer("conversion-value", in: 0...63)
        p.coarseConversionValue = r.word("coarse-conversion-value", of: coarseValues)
        p.didWin = r.bool("did-win", required: known == .v3_0 || known == .v4_0)
        p.postbackSequenceIndex = r.integer("postback-sequence-index", in: 0...2, required: known == .v4_0)
        if let code = r.string("country-code"),
           !(code.utf8.count == 2 && code.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            r.note("country_code_invalid")
        }
        p.countryCode = r.string("country-code")
        if r.has("conversion-value") && r.has("coarse-conversion-value") { r.note("fine_and_coarse_together") }
        if r.has("source-app-id") && r.has("source-domain") { r.note("source_app_and_domain_together") }
        // Postbacks 2 and 3 carry the coarse value only (the later windows' privacy rule).
        if let index = p.postbackSequenceIndex, index > 0, r.has("conversion-value") { r.note("fine_value_in_later_postback") }
        if let known {
            for key in known.absentFields where r.has(key) { r.note(FieldReader.reasonName(key) + "_not_in_version") }
            p.signedMessage = signedMessage(known, r)
        } else {
            r.note("unknown_version")
        }
        p.reasons = r.reasons
        return .success(p)
    }

    /// `skadnetwork␟<ad network>␟<transaction>␟<index>` (U+001F between). The form is stored with
    /// each postback, so it must never change.
    private static func duplicateKey(adNetworkID: String, transactionID: String, sequenceIndex: String) -> String {
        ["skadnetwork", adNetworkID, transactionID, sequenceIndex].joined(separator: "\u{1F}")
    }

    /// The signed values' UTF-8, joined by the separator's, written straight into one buffer.
    private static func signedMessage(_ version: SKAdNetworkVersion, _ r: FieldReader) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        for field in version.signedFields {
            let text: String? = switch field {
            case .always(let key): r.signedText(key)
            case .ifPresent(let keys): keys.lazy.compactMap { r.signedText($0) }.first
            }
            guard var text else { continue }
            if !out.isEmpty { out += [0xE2, 0x81, 0xA3] }  // U+2063 INVISIBLE SEPARATOR
            text.withUTF8 { out.append(contentsOf: $0) }
        }
        return out
    }

    /// Whether Apple's signature can be checked at all: a known version signed with P-256.
    public var isCheckable: Bool { knownVersion?.isSignedWithP256 ?? false }


    /// The campaign as the ad network set it: the source identifier (4.0) or the campaign id.
    public var campaign: String? {
        sourceIdentifier ?? campaignID.map(String.init)
    }
}
