import AdAttributionKit
import AppDevelopers
import Postbacks
import Primitives
import RecordLog
import SKAdNetwork

/// Paste and verify: what the endpoint makes of a postback someone pasted, without storing
/// anything. It is what a developer does first when a partner's numbers disagree.
/// - the protocol and version;
/// - the key that verifies it, or why none does;
/// - the verdict the well-known path would give it, and the rules its fields break;
/// - every field, the conversion value decoded against the app's schema, the ad network and
///   campaign by their registered (or known) names;
/// - whether it is stored already, as the same postback or as another one under its key.
///
/// A body may be a SKAdNetwork JSON, an AdAttributionKit JSON (`jws-string`), or a bare JWS.
struct PostbackInspection {
    let proto: AttributionProtocol
    let postback: Postback
    let fields: PostbackFields
    let check: PostbackKeyring.Check
    let verdict: PostbackVerdict
    let reasons: [String]
    let seen: Seen

    enum Seen: Equatable {
        case never
        /// The same content is stored, as postback `id`.
        case stored(id: UInt64)
        /// Another postback under the same key (`transaction-id`, `postback-identifier`).
        case otherContent(ids: [UInt64])
        /// A bare JWS: postbacks under its key are stored, but whether one is this one cannot be
        /// told (the stored copy carries fields beside its JWS).
        case sameKey(ids: [UInt64])
    }

    /// The body read as one of the two protocols; a refusal names what it is not.
    static func read(_ body: [UInt8]) throws(Problem) -> (proto: AttributionProtocol, json: [UInt8], bare: Bool) {
        var start = 0, end = body.count
        while start < end, [9, 10, 13, 32].contains(body[start]) { start += 1 }
        while end > start, [9, 10, 13, 32].contains(body[end - 1]) { end -= 1 }
        guard start < end else {
            throw Problem(status: 400, rule: "empty_body", field: "body",
                          detail: "paste a postback: a SKAdNetwork JSON, an AdAttributionKit JSON or a bare JWS")
        }
        let trimmed = Array(body[start..<end])
        if trimmed[0] == UInt8(ascii: "{") {
            guard case .success(.object(let members)) = Postback.parse(trimmed) else {
                throw Problem(status: 400, rule: "malformed_json", field: "body", detail: "the body begins like JSON but is not a JSON object")
            }
            if members.contains(where: { $0.key == "jws-string" }) { return (.adattributionkit, trimmed, false) }
            if members.contains(where: { $0.key == "ad-network-id" || $0.key == "attribution-signature" }) { return (.skadnetwork, trimmed, false) }
            throw Problem(status: 400, rule: "not_a_postback", field: "body",
                          detail: "a JSON object with neither jws-string (AdAttributionKit) nor ad-network-id (SKAdNetwork)")
        }
        // A bare JWS: three base64url parts; read as the `jws-string` of a copy.
        let text = String(decoding: trimmed, as: UTF8.self)
        guard CompactJWS(text) != nil else {
            throw Problem(status: 400, rule: "not_a_postback", field: "body",
                          detail: "neither JSON nor a compact JWS (three base64url parts separated by dots)")
        }
        var wrapped = "{\"jws-string\":"
        JSONValue.writeString(text, to: &wrapped)
        return (.adattributionkit, Array((wrapped + "}").utf8), true)
    }

    /// Reads, checks and looks up `body`; `lookUpOnDisk` finds what the key tables hold under a key.
    static func inspect(_ body: [UInt8], keyring: PostbackKeyring, ledger: PostbackLedger, developmentMode: Bool,
                        lookUpOnDisk: (String) -> [PostbackArchive.Earlier]) throws(Problem) -> PostbackInspection {
        let (proto, json, bare) = try read(body)
        let parsed: JSONValue, postback: Postback
        switch Postback.parse(json).flatMap({ value in Postback.read(proto, json: value).map { (value, $0) } }) {
        case .success(let read): (parsed, postback) = read
        case .failure(let problem): throw Problem(problem)
        }
        let contentHash = PostbackContent.fingerprint(parsed)
        let key = postback.duplicateKey
        var seen = Seen.never
        let inMemory = ledger.known(duplicateKey: key)
        let onDisk = lookUpOnDisk(key)
        let ids = Array(Set(inMemory.map(\.id) + onDisk.map(\.id))).sorted()
        if bare {
            if !ids.isEmpty { seen = .sameKey(ids: ids) }
        } else if let same = inMemory.first(where: { $0.contentHash == contentHash }) {
            seen = .stored(id: same.id)
        } else if let same = onDisk.first(where: { $0.contentHash == contentHash }) {
            seen = .stored(id: same.id)
        } else if !ids.isEmpty {
            seen = .otherContent(ids: ids)
        }
        let check = keyring.check(postback)
        let (verdict, reasons) = PostbackVerdict.judge(postback, signature: check, developmentMode: developmentMode,
                                                       conflictsWithEarlier: { if case .otherContent = seen { true } else { false } }())
        return PostbackInspection(proto: proto, postback: postback, fields: PostbackFields(proto, body: json), check: check,
                                  verdict: verdict, reasons: reasons, seen: seen)
    }

    /// Which key verified it, or why none did, in words.
    var signatureExplanation: String {
        switch (check.outcome, postback) {
        case (.apple, .skadnetwork): "Apple's SKAdNetwork P-256 key verifies it"
        case (.apple, .adattributionkit): "Apple's key \(postback.kid ?? "") verifies it"
        case (.appleDevelopment, _):
            "Apple's development key \(postback.kid ?? "") verifies it: a development postback (Developer Mode or Settings › Developer), never a real install"
        case (.testKey, _): "the test key \(check.keyName ?? "") verifies it (--postback-key): not Apple's"
        case (.unverifiable, .skadnetwork(let p)):
            p.knownVersion == nil
                ? "SKAdNetwork version \(p.version) is not one this endpoint knows how to check"
                : "SKAdNetwork \(p.version) is signed with Apple's P-192 key, which no library here can check: kept and counted, marked unverifiable"
        case (.unverifiable, _): "it cannot be checked here"
        case (.invalid, .skadnetwork):
            "no key verifies it: the signature does not match the signed fields (one was changed, or it was not signed by Apple)"
        case (.invalid, .adattributionkit(let p)):
            if p.alg != "ES256" {
                "no key verifies it: its JWS names the algorithm \(p.alg ?? "none"), and only ES256 is Apple's"
            } else if let kid = p.kid, AdAttributionKitKeys.all.contains(where: { $0.kid == kid }) {
                "Apple's key \(kid) does not verify it: the payload or the signature was changed"
            } else {
                "no key verifies it: its kid \(p.kid ?? "(none)") is not one of Apple's keys, nor a test key's"
            }
        }
    }

    /// The key's name, as Apple names it: the JWS `kid`, or SKAdNetwork's one key.
    var keyName: String? {
        switch check.outcome {
        case .apple, .appleDevelopment: if case .skadnetwork = postback { "apple-skadnetwork-p256" } else { postback.kid }
        case .testKey: check.keyName
        case .invalid, .unverifiable: nil
        }
    }

    /// `showsLedger`: whether the answer may say what the endpoint has stored (the admin's: the
    /// ledger is every app's); else `seen` and `duplicate_key` are null.
    func json(_ registry: AppRegistry, showsLedger: Bool = true) -> String {
        var members: [JSONMember] = []
        func add(_ key: String, _ value: JSONValue) { members.append(JSONMember(key: key, value: value)) }
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        func number(_ value: Int?) -> JSONValue { value.map { .number(String($0)) } ?? .null }
        add("protocol", .string(proto.name))
        let network: String?, campaign: String?, appID: Int?, fine: Int?, coarse: String?
        switch postback {
        case .skadnetwork(let p):
            add("version", .string(p.version))
            (network, campaign, appID, fine, coarse) = (p.adNetworkID, p.campaign, p.appID, p.conversionValue, p.coarseConversionValue)
        case .adattributionkit(let p):
            add("version", .null)
            (network, campaign, appID, fine, coarse) = (p.adNetworkIdentifier, p.sourceIdentifier, p.advertisedItemIdentifier,
                                                         p.conversionValue, p.coarseConversionValue)
        }
        add("signature", .object([JSONMember(key: "outcome", value: .string(check.outcome.name)),
                                  JSONMember(key: "key", value: text(keyName)),
                                  JSONMember(key: "explanation", value: .string(signatureExplanation))]))
        add("verdict", .string(verdict.name))
        add("reasons", .array(reasons.map { .string($0) }))
        add("duplicate_key", showsLedger ? .string(postback.duplicateKey) : .null)
        let app = appID.flatMap { registry.app(id: $0) }
        add("app", appID.map { id in
            .object([JSONMember(key: "app_id", value: .number(String(id))), JSONMember(key: "name", value: text(app?.name)),
                     JSONMember(key: "registered", value: .bool(app != nil))])
        } ?? .null)
        let adNetwork = network.flatMap { registry.adNetwork(id: $0) }
        add("ad_network", network.map { id in
            .object([JSONMember(key: "id", value: .string(id)), JSONMember(key: "name", value: text(adNetwork?.name)),
                     JSONMember(key: "campaign", value: text(campaign)),
                     JSONMember(key: "campaign_name", value: text(campaign.flatMap { adNetwork?.campaign(named: $0) }))])
        } ?? .null)
        let meaning: String? = fine.flatMap { app?.schema.meaning(fine: $0) } ?? coarse.flatMap { app?.schema.meaning(coarse: $0) }
        add("conversion_value", fine != nil || coarse != nil
            ? .object([JSONMember(key: "tier", value: .string(fine != nil ? "fine" : "coarse")),
                       JSONMember(key: "value", value: fine.map { .number(String($0)) } ?? text(coarse)),
                       JSONMember(key: "meaning", value: text(meaning))])
            : .null)
        add("fields", .object(fields.members.filter { $0.key != "jws-string" && $0.key != "attribution-signature" }))
        add("unsigned_fields", .array(fields.unsigned.map { .string($0) }))
        switch showsLedger ? seen : nil {
        case nil:
            add("seen", .null)
        case .never?:
            add("seen", .object([JSONMember(key: "stored", value: .bool(false)), JSONMember(key: "id", value: .null),
                                 JSONMember(key: "other_content_ids", value: .array([]))]))
        case .stored(let id)?:
            add("seen", .object([JSONMember(key: "stored", value: .bool(true)), JSONMember(key: "id", value: .number(String(id))),
                                 JSONMember(key: "other_content_ids", value: .array([]))]))
        case .otherContent(let ids)?:
            add("seen", .object([JSONMember(key: "stored", value: .bool(false)), JSONMember(key: "id", value: .null),
                                 JSONMember(key: "other_content_ids", value: .array(ids.prefix(16).map { .number(String($0)) }))]))
        case .sameKey(let ids)?:
            // Stored under its key, as these ids; whether as this very copy, a bare JWS cannot say.
            add("seen", .object([JSONMember(key: "stored", value: .null), JSONMember(key: "id", value: .null),
                                 JSONMember(key: "same_key_ids", value: .array(ids.prefix(16).map { .number(String($0)) })),
                                 JSONMember(key: "other_content_ids", value: .array([]))]))
        }
        return JSONValue.object(members).serialized()
    }
}
