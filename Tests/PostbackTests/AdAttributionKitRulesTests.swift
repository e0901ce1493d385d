import AdAttributionKit
import Primitives
import Testing

/// AdAttributionKit's envelope and JWS rules.
@Suite struct AdAttributionKitRulesTests {
    private func segment(_ json: String) -> String {
        var s = Array(json.utf8).base64URL
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }

    private let payload = #"{"impression-type":"app-impression","ad-network-identifier":"net.adattributionkit","source-identifier":"1234","advertised-item-identifier":42,"conversion-type":"download","postback-identifier":"P-1","did-win":true,"postback-sequence-index":0}"#

    private func body(payload: String? = nil, header: String = #"{"kid":"apple-cas-identifier/0","alg":"ES256"}"#,
                      envelope: String = #","ad-interaction-type":"click""#) -> String {
        let jws = segment(header) + "." + segment(payload ?? self.payload) + "." + segment("sig")
        return #"{"jws-string":"\#(jws)"\#(envelope)}"#
    }

    private func read(_ text: String) -> Result<AdAttributionKitPostback, RequestProblem> {
        AdAttributionKitPostback.read(try! JSONParser().parse(Array(text.utf8)))
    }

    private func reasons(_ text: String) -> [String] {
        (try? read(text).get())?.reasons ?? ["refused"]
    }

    @Test func aCleanPostbackHasNoReasons() throws {
        let p = try read(body()).get()
        #expect(p.reasons == [])
        #expect(p.kid == "apple-cas-identifier/0" && p.alg == "ES256")
        #expect(p.duplicateKey == "adattributionkit\u{1F}P-1")
        #expect(p.campaign == "1234")
    }

    @Test func onlyAMissingOrMalformedJWSIsRefused() {
        for bad in [#"{"ad-interaction-type":"click"}"#, #"{"jws-string":7}"#, #"{"jws-string":"a.b"}"#,
                    #"{"jws-string":"a.b.c.d"}"#, #"{"jws-string":"a+b.c.d"}"#, #"{"jws-string":".YQ.YQ"}"#, "[1]",
                    // Found by the fuzzer: padding would let two texts name the same bytes.
                    #"{"jws-string":"fQA.eo4RFcw=."}"#] {
            guard case .failure(let problem) = read(bad) else { Issue.record("stored: \(bad)"); continue }
            #expect(problem.kind == .malformed, "\(bad)")
        }
        // An empty signature segment splits fine: it is stored, and will not verify.
        #expect(reasons(#"{"jws-string":"eyJ9.eyJ9.","ad-interaction-type":"click"}"#) == ["jws_header_invalid", "jws_payload_invalid"])
    }

    @Test func envelopeRules() {
        #expect(reasons(body(envelope: #","ad-interaction-type":"click","conversion-value":64"#)) == ["conversion_value_out_of_range"])
        #expect(reasons(body(envelope: #","ad-interaction-type":"click","conversion-value":3,"coarse-conversion-value":"low""#)) == ["fine_and_coarse_together"])
        #expect(reasons(body(envelope: #","ad-interaction-type":"tap""#)) == ["ad_interaction_type_invalid"])
        #expect(reasons(body(envelope: "")) == ["ad_interaction_type_missing"])
        #expect(reasons(body(envelope: #","ad-interaction-type":"view","country-code":"USA""#)) == ["country_code_invalid"])
    }

    @Test func payloadRules() {
        func with(_ from: String, _ to: String) -> [String] { reasons(body(payload: payload.replacingOccurrences(of: from, with: to))) }
        #expect(with(#""1234""#, #""1""#) == ["source_identifier_invalid"])
        #expect(with(#""postback-sequence-index":0"#, #""postback-sequence-index":3"#) == ["postback_sequence_index_out_of_range"])
        #expect(with(#""did-win":true"#, #""did-win":"yes""#) == ["did_win_not_a_boolean"])
        #expect(with(#""conversion-type":"download""#, #""conversion-type":"install""#) == ["conversion_type_invalid"])
        #expect(with(#""impression-type":"app-impression""#, #""impression-type":"banner""#) == ["impression_type_invalid"])
        #expect(with(#","postback-identifier":"P-1""#, "") == ["postback_identifier_missing"])
        // One of Apple's pages spells it without the dash.
        #expect(with(#""download""#, #""reengagement""#) == [])
        #expect((try? read(body(payload: payload.replacingOccurrences(of: #""download""#, with: #""reengagement""#))).get())?.conversionType == "re-engagement")
        // Re-engagement is attributed to clicks only.
        #expect(reasons(body(payload: payload.replacingOccurrences(of: #""download""#, with: #""re-engagement""#),
                             envelope: #","ad-interaction-type":"view""#)) == ["reengagement_from_view"])
        #expect(reasons(body(payload: payload.replacingOccurrences(of: #""postback-sequence-index":0"#, with: #""postback-sequence-index":1"#),
                             envelope: #","ad-interaction-type":"click","conversion-value":5"#)) == ["fine_value_in_later_postback"])
    }

    @Test func theHeaderNamesItsAlgorithm() {
        #expect(reasons(body(header: #"{"kid":"apple-cas-identifier/0","alg":"RS256"}"#)) == ["jws_alg_not_es256"])
        #expect(reasons(body(header: "not json")) == ["jws_header_invalid"])
        #expect(reasons(body(payload: "[]")) == ["jws_payload_invalid"])
    }

    @Test func theSignedBytesAreTheSegmentsAsSent() throws {
        let text = segment(#"{"kid":"a\/b","alg":"ES256"}"#) + "." + segment(payload) + "." + segment("s")
        let jws = try #require(CompactJWS(text))
        #expect(jws.signingInput == Array(text.split(separator: ".").prefix(2).joined(separator: ".").utf8))
        #expect(jws.signature == Array("s".utf8))
    }

    @Test func theProductionKidIsTheSKAdNetworkKey() {
        #expect(AdAttributionKitKeys.key(kid: "apple-cas-identifier/0")?.isDevelopment == false)
        #expect(AdAttributionKitKeys.key(kid: "apple-development-identifier/1")?.isDevelopment == true)
        #expect(AdAttributionKitKeys.key(kid: "apple-cas-identifier/1") == nil)
    }
}

extension Array where Element == UInt8 {
    /// base64url with padding, from a plain encoder written for this test (not the code under test).
    var base64URL: String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < count {
            let b0 = self[i], b1 = i + 1 < count ? self[i + 1] : 0, b2 = i + 2 < count ? self[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(i + 1 < count ? alphabet[Int((b1 & 15) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < count ? alphabet[Int(b2 & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
