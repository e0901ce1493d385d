import Foundation
import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

private let production = PCMReportValidator(siteRules: SiteRules(developmentMode: false))
private let development = PCMReportValidator(siteRules: SiteRules(developmentMode: true))

/// A valid v3 body with one field replaced by raw JSON text (or removed with nil).
private func body(_ overrides: [String: String?] = [:], extra: String = "") -> String {
    var fields: [(String, String)] = [
        ("source_engagement_type", "\"click\""), ("source_site", "\"news.example\""), ("source_id", "42"),
        ("attributed_on_site", "\"shop.example\""), ("trigger_data", "5"), ("version", "3"),
    ]
    for (key, value) in overrides {
        if let i = fields.firstIndex(where: { $0.0 == key }) {
            if let value { fields[i].1 = value } else { fields.remove(at: i) }
        } else if let value {
            fields.append((key, value))
        }
    }
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + extra + "}"
}

private func rejection(_ text: String, _ validator: PCMReportValidator = production) -> ReportRejection? {
    if case .failure(let r) = validator.validate(body: Array(text.utf8)) { return r }
    return nil
}

private func report(_ text: String, _ validator: PCMReportValidator = production) -> PCMReport? {
    try? validator.validate(body: Array(text.utf8)).get()
}

@Suite struct PCMReportValidatorTests {
    /// Every vector in `Resources/vectors/pcm_reports.json` (where each comes from:
    /// `Resources/vectors/SOURCES.md`). The token vector holds placeholders, not base64url, so it
    /// must be refused until real values are supplied.
    @Test func sharedVectors() throws {
        let url = try #require(Bundle.module.url(forResource: "pcm_reports", withExtension: "json", subdirectory: "vectors"))
        let data = try Data(contentsOf: url)
        let vectors = try #require(JSONSerialization.jsonObject(with: data) as? [String: [String: Any]])
        #expect(vectors.count >= 9)
        for (name, vector) in vectors {
            let raw = try #require(vector["raw"] as? String)
            // WebKit's own test uses 127.0.0.1, valid only in development mode.
            let validator = raw.contains("127.0.0.1") ? development : production
            let result = validator.validate(body: Array(raw.utf8))
            switch vector["valid"] {
            case let valid as Bool:
                #expect(((try? result.get()) != nil) == valid, "\(name): \(result)")
            default:
                #expect(rejection(raw)?.rule == .invalidBase64URL, "\(name) carries placeholder tokens")
            }
        }
        #expect(rejection(try #require(vectors["webkit_v3_exact_bytes"]?["raw"] as? String))?.rule == .notRegistrableDomain,
                "an IP literal is refused outside development mode")
    }

    @Test func webKitBytesParseToTheFields() throws {
        let raw = #"{"source_engagement_type":"click","source_site":"127.0.0.1","source_id":42,"attributed_on_site":"example.com","trigger_data":12,"version":3}"#
        let r = try #require(report(raw, development))
        #expect(r == PCMReport(sourceSite: "127.0.0.1", sourceID: 42, attributedOnSite: "example.com", triggerData: 12))
    }

    @Test(arguments: [
        ("0", true), ("255", true), ("256", false), ("-1", false), ("3.5", false), ("\"3\"", false), ("true", false),
        ("null", false), ("3.0", false), ("1e2", false), ("[1]", false), ("{}", false), ("-0", false),
        (String(repeating: "9", count: 10_000), false), ("18446744073709551616", false),
    ])
    func sourceIDMustBeAnIntegerFrom0To255(literal: String, valid: Bool) {
        let r = rejection(body(["source_id": literal]))
        #expect((r == nil) == valid, "source_id \(literal.prefix(30))")
        if let r {
            #expect(r.field == "source_id")
            #expect([.wrongType, .outOfRange].contains(r.rule))
        }
    }

    @Test func sourceIDRulesNameTheProblem() {
        #expect(rejection(body(["source_id": "256"]))?.rule == .outOfRange)
        #expect(rejection(body(["source_id": "\"3\""]))?.rule == .wrongType)
        #expect(rejection(body(["source_id": "\"3\""]))?.detail.contains("the string \"3\"") == true)
        #expect(rejection(body(["source_id": String(repeating: "9", count: 10_000)]))?.detail.contains("10000 digits") == true)
    }

    @Test(arguments: [("0", true), ("15", true), ("16", false), ("-1", false), ("12.0", false), ("\"12\"", false)])
    func triggerDataMustBeAnIntegerFrom0To15(literal: String, valid: Bool) {
        let r = rejection(body(["trigger_data": literal]))
        #expect((r == nil) == valid)
        if let r { #expect(r.field == "trigger_data") }
    }

    @Test func versions() {
        for v in ["1", "2", "3"] { #expect(rejection(body(["version": v])) == nil) }
        #expect(rejection(body(["version": "4"]))?.rule == .unsupportedVersion)
        #expect(rejection(body(["version": "0"]))?.rule == .unsupportedVersion)
        #expect(rejection(body(["version": "\"3\""]))?.rule == .wrongType)
    }

    @Test func engagementTypeIsExactlyClick() {
        #expect(rejection(body(["source_engagement_type": "\"view\""]))?.rule == .notClick)
        #expect(rejection(body(["source_engagement_type": "\"Click\""]))?.rule == .notClick)
        #expect(rejection(body(["source_engagement_type": "1"]))?.rule == .wrongType)
    }

    @Test(arguments: ["source_engagement_type", "source_site", "source_id", "attributed_on_site", "trigger_data", "version"])
    func everyFieldIsRequired(field: String) {
        let r = rejection(body([field: nil]))
        #expect(r?.rule == .missingField)
        #expect(r?.field == field)
    }

    @Test func sites() {
        let cases: [(String, ReportRejection.Rule?)] = [
            // PROTOCOLS.md calls shop.example.co.uk registrable; by the list it is a subdomain of example.co.uk.
            ("\"example.co.uk\"", nil), ("\"shop.example.co.uk\"", .notRegistrableDomain), ("\"example.com\"", nil), ("\"xn--bcher-kva.de\"", nil),
            ("\"co.uk\"", .notRegistrableDomain), ("\"www.shop.example\"", .notRegistrableDomain),
            ("\"Shop.Example\"", .notRegistrableDomain), ("\"bücher.de\"", .notRegistrableDomain),
            ("\"localhost\"", .notRegistrableDomain), ("\"127.0.0.1\"", .notRegistrableDomain),
            ("\"[::1]\"", .notRegistrableDomain), ("\"https://shop.example\"", .notRegistrableDomain),
            ("\"shop.example.\"", .notRegistrableDomain), ("\"shop..example\"", .notRegistrableDomain),
            ("\"-shop.example\"", .notRegistrableDomain), ("\"sh_op.example\"", .notRegistrableDomain),
            ("\"\"", .notRegistrableDomain), ("\"1.2.3.4.5\"", .notRegistrableDomain), ("42", .wrongType),
        ]
        for (site, rule) in cases {
            let r = rejection(body(["attributed_on_site": site]))
            #expect(r?.rule == rule, "\(site)")
            if r != nil { #expect(r?.field == "attributed_on_site") }
        }
        #expect(rejection(body(["attributed_on_site": "\"www.shop.example\""]))?.detail.contains("the site is shop.example") == true)
        #expect(rejection(body(["attributed_on_site": "\"bücher.de\""]))?.detail.contains("xn--bcher-kva.de") == true)
    }

    @Test func developmentModeAcceptsLocalhostAndIPLiterals() {
        for site in ["\"localhost\"", "\"127.0.0.1\"", "\"::1\""] {
            #expect(rejection(body(["source_site": site]), development) == nil, "\(site)")
        }
        #expect(rejection(body(["source_site": "\"co.uk\""]), development)?.rule == .notRegistrableDomain)
    }

    @Test func sitesMustDiffer() {
        let r = rejection(body(["source_site": "\"shop.example\""]))
        #expect(r?.rule == .sameSite)
        #expect(r?.field == "attributed_on_site")
    }

    @Test func tokensComeInPairsAndAreBase64URL() {
        let token = "\"7JgS5aIQPUm9T5DcT2a91NC1lt2xq5bLjuaJi4A_Wbg\""
        #expect(report(body(["source_secret_token": token, "source_secret_token_signature": token]))?.sourceSecretToken != nil)
        #expect(rejection(body(["source_secret_token": token]))?.rule == .unpairedToken)
        #expect(rejection(body(["destination_secret_token_signature": token]))?.field == "destination_secret_token")
        for bad in ["\"a+b/\"", "\"abc=\"", "\"\"", "\"a\"", "7", "\"has space\""] {
            let r = rejection(body(["source_secret_token": bad, "source_secret_token_signature": token]))
            #expect(r?.field == "source_secret_token", "\(bad)")
        }
    }

    @Test func unknownFieldsAreKeptInOrder() throws {
        let r = try #require(report(body(extra: #","campaign":"x","nested":{"a":[1,2]}"#)))
        #expect(r.extraFields.map(\.key) == ["campaign", "nested"])
        #expect(r.extraFields[1].value.serialized() == #"{"a":[1,2]}"#)
    }

    @Test func dashNamedBodiesAreNormalizedAndMarked() throws {
        let dashed = #"{"source-engagement-type":"click","source-site":"news.example","source-id":7,"attributed-on-site":"shop.example","trigger-data":3,"report-version":1}"#
        let r = try #require(report(dashed))
        #expect(r.usedDashKeys)
        #expect(r.sourceID == 7 && r.triggerData == 3 && r.version == 1)
        let mixed = #"{"source-engagement-type":"click","source_site":"news.example","source-id":7,"attributed-on-site":"shop.example","trigger-data":3,"report-version":1}"#
        #expect(rejection(mixed)?.rule == .mixedKeyForms)
    }

    @Test func bodiesThatAreNotReportObjects() {
        #expect(rejection("[]")?.rule == .notAnObject)
        #expect(rejection("42")?.rule == .notAnObject)
        #expect(rejection("\"click\"")?.rule == .notAnObject)
        #expect(rejection("null")?.rule == .notAnObject)
        #expect(rejection("")?.rule == .malformedJSON)
        #expect(rejection("{\"source_id\":1")?.rule == .malformedJSON)
        #expect(rejection(body(extra: ",\"source_id\":43"))?.rule == .duplicateKey)
        #expect(rejection(body(extra: ",\"deep\":" + String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)))?.rule == .tooDeep)
        #expect(rejection(String(decoding: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], as: UTF8.self)) != nil)
        if case .failure(let r) = production.validate(body: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) {
            #expect(r.rule == .invalidUTF8)
        } else {
            Issue.record("invalid UTF-8 was accepted")
        }
    }

    @Test func unicodeInValuesIsHandled() {
        #expect(rejection(body(["source_site": "\"n\\u0065ws.example\""])) == nil, "escapes decode to the same site")
        #expect(rejection(body(["source_site": "\"😀.example\""]))?.rule == .notRegistrableDomain)
        #expect(rejection(body(extra: ",\"note\":\"日本語 😀\"")) == nil)
    }
}

@Suite struct FieldSlotTests {
    /// The slot lookup relies on every known key having a distinct length; a new key that
    /// breaks that must fail here rather than be silently ignored.
    @Test func everyKnownKeyFindsItsOwnSlot() {
        for (i, name) in PCMReportValidator.Fields.names.enumerated() {
            #expect(PCMReportValidator.Fields.slot(name) == i, "\(name)")
        }
        #expect(Set(PCMReportValidator.Fields.names.map(\.utf8.count)).count == PCMReportValidator.Fields.names.count)
        #expect(PCMReportValidator.Fields.slot("source_xx") == nil, "same length as source_id, different key")
    }
}
