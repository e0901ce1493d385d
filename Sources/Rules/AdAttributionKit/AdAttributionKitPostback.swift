import Primitives

/// One AdAttributionKit postback copy: the JSON envelope the device sends, the compact JWS inside
/// it, and every rule broken (each one a quarantine reason).
///
/// Only the JWS is signed. The envelope's other fields (`conversion-value`,
/// `coarse-conversion-value`, `ad-interaction-type`, `country-code`) are kept and reported, and
/// marked unsigned wherever they are shown.
public struct AdAttributionKitPostback: Sendable, Equatable {
    public var jws: CompactJWS
    /// The JWS header's `kid` and `alg`, when the header is a JSON object with those strings.
    public var kid: String?
    public var alg: String?
    /// The payload's members, as signed; empty when the payload is not a JSON object.
    public var payload: [JSONMember]
    public var adNetworkIdentifier: String?
    public var sourceIdentifier: String?
    public var advertisedItemIdentifier: Int?
    public var conversionType: String?
    public var postbackIdentifier: String?
    public var didWin: Bool?
    public var postbackSequenceIndex: Int?
    public var marketplaceIdentifier: String?
    public var publisherItemIdentifier: Int?
    /// The envelope's unsigned fields.
    public var conversionValue: Int?
    public var coarseConversionValue: String?
    public var adInteractionType: String?
    public var countryCode: String?
    public var reasons: [String]
    /// Devices resend until they get a 200; `postback-identifier` names one postback however
    /// often it arrives (the JWS itself when the identifier is missing).
    public var duplicateKey: String

    public static let unsignedFields = ["conversion-value", "coarse-conversion-value", "ad-interaction-type", "country-code"]
    public static let conversionTypes = ["download", "redownload", "re-engagement"]

    /// Reads a parsed body. Refused only without a `jws-string` of three base64url segments.
    public static func read(_ body: JSONValue) -> Result<AdAttributionKitPostback, RequestProblem> {
        guard case .object(let members) = body else {
            return .failure(RequestProblem(.malformed, rule: "not_an_object", field: nil,
                                           detail: "a postback is a JSON object; got \(body.typeName)"))
        }
        var envelope = FieldReader(members)
        guard case .string(let text) = envelope.value("jws-string") else {
            let got = envelope.value("jws-string").map { "a \($0.typeName)" } ?? "nothing"
            return .failure(RequestProblem(.malformed, rule: "not_a_postback", field: "jws-string",
                                           detail: "an AdAttributionKit postback has a string jws-string; got \(got)"))
        }
        guard let jws = CompactJWS(text) else {
            return .failure(RequestProblem(.malformed, rule: "not_a_jws", field: "jws-string",
                                           detail: "jws-string must be three base64url segments joined by dots (a compact JWS)"))
        }
        var p = AdAttributionKitPostback(jws: jws, payload: [], reasons: [], duplicateKey: "")
        let parser = JSONParser()
        if case .object(let header)? = try? parser.parse(jws.header) {
            var h = FieldReader(header)
            p.kid = h.string("kid")
            p.alg = h.string("alg")
        } else {
            envelope.note("jws_header_invalid")
        }
        if case .object(let payload)? = try? parser.parse(jws.payload) {
            p.payload = payload
        } else {
            envelope.note("jws_payload_invalid")
        }
        var s = FieldReader(p.payload)
        // A payload that cannot be read has one reason, not one per field it lacks.
        if !envelope.reasons.contains("jws_payload_invalid") {
            _ = s.word("impression-type", of: ["app-impression"], required: true)
            p.adNetworkIdentifier = s.string("ad-network-identifier", required: true)
            p.sourceIdentifier = s.digits("source-identifier", count: 2...4, required: true)
            p.advertisedItemIdentifier = s.integer("advertised-item-identifier", in: 0...Int.max, required: true)
            // One of Apple's pages spells it `reengagement`; both mean the same.
            p.conversionType = s.word("conversion-type", of: conversionTypes + ["reengagement"], required: true)
                .map { $0 == "reengagement" ? "re-engagement" : $0 }
            p.postbackIdentifier = s.string("postback-identifier", required: true)
            p.didWin = s.bool("did-win", required: true)
            p.postbackSequenceIndex = s.integer("postback-sequence-index", in: 0...2, required: true)
            p.marketplaceIdentifier = s.string("marketplace-identifier")
            p.publisherItemIdentifier = s.integer("publisher-item-identifier", in: 0...Int.max)
        }
        p.conversionValue = envelope.integer("conversion-value", in: 0...63)
        p.coarseConversionValue = envelope.word("coarse-conversion-value", of: ["low", "medium", "high"])
        p.adInteractionType = envelope.word("ad-interaction-type", of: ["click", "view"], required: true)
        if let code = envelope.string("country-code"),
           !(code.utf8.count == 2 && code.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            envelope.note("country_code_invalid")
        }
        p.countryCode = envelope.string("country-code")
        if envelope.has("conversion-value") && envelope.has("coarse-conversion-value") { envelope.note("fine_and_coarse_together") }
        if let index = p.postbackSequenceIndex, index > 0, envelope.has("conversion-value") {
            envelope.note("fine_value_in_later_postback")
        }
        // Re-engagement is attributed to clicks only.
        if p.conversionType == "re-engagement" && p.adInteractionType == "view" { envelope.note("reengagement_from_view") }
        if p.alg != nil && p.alg != "ES256" { envelope.note("jws_alg_not_es256") }
        p.reasons = envelope.reasons + s.reasons.filter { !envelope.reasons.contains($0) }
        p.duplicateKey = "adattributionkit\u{1F}" + (p.postbackIdentifier ?? text)
        return .success(p)
    }

    /// The campaign as the ad network set it.
    public var campaign: String? { sourceIdentifier }
}
