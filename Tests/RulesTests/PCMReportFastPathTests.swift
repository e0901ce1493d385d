import Testing
@testable import PCM
@testable import Primitives
@testable import SiteOwners

/// The fast path must agree with the general path on every body it accepts, and must accept the
/// shape WebKit sends (or it saves nothing).
@Suite struct PCMReportFastPathTests {
    let validator = PCMReportValidator(siteRules: SiteRules(developmentMode: false))
    var fast: PCMReportFastPath { PCMReportFastPath(sites: validator.siteRules) }

    static let token = "7JgS5aIQPUm9T5DcT2a91NC1lt2xq5bLjuaJi4A_Wbg"
    static let bodies: [String] = [
        #"{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}"#,
        #"{"source_engagement_type":"click","source_site":"search.example","source_id":3,"attributed_on_site":"destination.example","trigger_data":12,"version":1}"#,
        #"{"version":2,"trigger_data":0,"attributed_on_site":"example.co.uk","source_id":255,"source_site":"news.example","source_engagement_type":"click"}"#,
        #"{"source_engagement_type":"click","source_site":"news.example","source_id":3,"attributed_on_site":"shop.example","trigger_data":15,"version":3,"source_secret_token":"\#(token)","source_secret_token_signature":"\#(token)"}"#,
        #"{"source_engagement_type":"click","source_site":"news.example","source_id":3,"attributed_on_site":"shop.example","trigger_data":15,"version":3,"destination_secret_token":"\#(token)","destination_secret_token_signature":"\#(token)"}"#,
    ]

    @Test func acceptsWhatWebKitSendsAndAgreesWithTheGeneralPath() throws {
        for body in Self.bodies {
            let bytes = Array(body.utf8)
            let report = try #require(fast.read(bytes), "\(body)")
            #expect(validator.validateGeneral(body: bytes) == .success(report))
        }
    }

    @Test func leavesEverythingElseToTheGeneralPath() {
        let base: String = Self.bodies[0]
        let tokenField: String = ",\"source_secret_token\":\"" + Self.token + "\"}"
        let others: [String] = [
            base.replacingOccurrences(of: "42", with: "256"),
            base.replacingOccurrences(of: "42", with: "042"),
            base.replacingOccurrences(of: "42", with: "-1"),
            base.replacingOccurrences(of: "42", with: "4.2"),
            base.replacingOccurrences(of: "42", with: String(repeating: "9", count: 10_000)),
            base.replacingOccurrences(of: "42", with: "\"42\""),
            base.replacingOccurrences(of: ":5,", with: ":16,"),
            base.replacingOccurrences(of: ":3}", with: ":4}"),
            base.replacingOccurrences(of: "click", with: "view"),
            base.replacingOccurrences(of: "shop.example", with: "news.example"),
            base.replacingOccurrences(of: "shop.example", with: "co.uk"),
            base.replacingOccurrences(of: "shop.example", with: "sh\\u006fp.example"),
            base.replacingOccurrences(of: ",\"version\"", with: ", \"version\""),
            base.replacingOccurrences(of: "}", with: ",\"extra\":1}"),
            base.replacingOccurrences(of: "}", with: ",\"source_id\":1}"),
            base.replacingOccurrences(of: "}", with: ",}"),
            base.replacingOccurrences(of: "}", with: tokenField),
            String(base.dropLast()),
            "{}", "{", "[]", "",
        ]
        for body in others {
            #expect(fast.read(Array(body.utf8)) == nil, "\(body.prefix(120))")
        }
    }
}
