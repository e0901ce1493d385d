import Primitives
import SKAdNetwork
import Testing

/// SKAdNetwork's field rules: what is refused (nothing that could be a postback), and what makes
/// a stored postback quarantined.
@Suite struct SKAdNetworkRulesTests {
    private let v4 = #"{"version":"4.0","ad-network-id":"net.skadnetwork","source-identifier":"5239","app-id":525463029,"transaction-id":"t-1","redownload":false,"source-domain":"example.com","fidelity-type":1,"did-win":true,"conversion-value":63,"postback-sequence-index":0,"attribution-signature":"MEUCIA=="}"#

    private func read(_ text: String) -> Result<SKAdNetworkPostback, RequestProblem> {
        SKAdNetworkPostback.read(try! JSONParser().parse(Array(text.utf8)))
    }

    private func reasons(_ text: String) -> [String] {
        (try? read(text).get())?.reasons ?? ["refused"]
    }

    /// `v4` with `key` set to the raw JSON `value` (nil removes it).
    private func v4(_ key: String, _ value: String?) -> String {
        var members = try! JSONParser().parse(Array(v4.utf8))
        guard case .object(var list) = members else { return v4 }
        list.removeAll { $0.key == key }
        if let value { list.append(JSONMember(key: key, value: try! JSONParser().parse(Array(value.utf8)))) }
        members = .object(list)
        return members.serialized()
    }

    @Test func aCleanPostbackHasNoReasons() {
        #expect(reasons(v4) == [])
    }

    @Test func onlyBodiesThatCannotBeAPostbackAreRefused() {
        for key in ["ad-network-id", "transaction-id", "attribution-signature"] {
            guard case .failure(let problem) = read(v4(key, nil)) else { Issue.record("\(key) missing was stored"); continue }
            #expect(problem.field == key && problem.rule == "not_a_postback")
            guard case .failure = read(v4(key, "42")) else { Issue.record("\(key) as a number was stored"); continue }
        }
        guard case .failure(let problem) = SKAdNetworkPostback.read(.array([])) else { Issue.record("an array was stored"); return }
        #expect(problem.rule == "not_an_object")
    }

    @Test func typesAndRangesQuarantine() {
        #expect(reasons(v4("conversion-value", "64")) == ["conversion_value_out_of_range"])
        #expect(reasons(v4("conversion-value", "-1")) == ["conversion_value_out_of_range"])
        #expect(reasons(v4("conversion-value", "6.0")) == ["conversion_value_not_an_integer"])
        #expect(reasons(v4("conversion-value", "\"6\"")) == ["conversion_value_not_an_integer"])
        #expect(reasons(v4("source-identifier", "\"1\"")) == ["source_identifier_invalid"])
        #expect(reasons(v4("source-identifier", "\"12345\"")) == ["source_identifier_invalid"])
        #expect(reasons(v4("source-identifier", "\"12a\"")) == ["source_identifier_invalid"])
        #expect(reasons(v4("source-identifier", "\"12\"")) == [])
        #expect(reasons(v4("postback-sequence-index", "3")) == ["postback_sequence_index_out_of_range"])
        #expect(reasons(v4("fidelity-type", "2")) == ["fidelity_type_out_of_range"])
        #expect(reasons(v4("did-win", "1")) == ["did_win_not_a_boolean"])
        #expect(reasons(v4("redownload", "\"false\"")) == ["redownload_not_a_boolean"])
        #expect(reasons(v4("country-code", "\"de\"")) == ["country_code_invalid"])
        #expect(reasons(v4("app-id", "99999999999999999999999")) == ["app_id_not_an_integer"])
    }

    @Test func fieldsThatMustNotAppearTogether() {
        let coarse = v4("coarse-conversion-value", "\"high\"")
        #expect(reasons(coarse) == ["fine_and_coarse_together"])
        #expect(reasons(v4("coarse-conversion-value", "\"huge\"")).contains("coarse_conversion_value_invalid"))
        #expect(reasons(v4("source-app-id", "1234")) == ["source_app_and_domain_together"])
        // Postbacks 2 and 3 carry the coarse value only.
        #expect(reasons(v4("postback-sequence-index", "1")) == ["fine_value_in_later_postback"])
    }

    @Test func eachVersionRequiresItsFields() {
        #expect(reasons(v4("did-win", nil)) == ["did_win_missing"])
        #expect(reasons(v4("source-identifier", nil)) == ["source_identifier_missing"])
        #expect(reasons(v4("postback-sequence-index", nil)) == ["postback_sequence_index_missing"])
        #expect(reasons(v4("campaign-id", "42")) == ["campaign_id_not_in_version"])
        let v3 = #"{"version":"3.0","ad-network-id":"n","campaign-id":42,"app-id":1,"transaction-id":"t","redownload":true,"fidelity-type":1,"did-win":true,"attribution-signature":"x"}"#
        #expect(reasons(v3) == [])
        #expect(reasons(v3.replacingOccurrences(of: #""did-win":true,"#, with: "")) == ["did_win_missing"])
        #expect(reasons(v3.replacingOccurrences(of: #""campaign-id":42,"#, with: "")) == ["campaign_id_missing"])
        #expect(reasons(v3.replacingOccurrences(of: #""campaign-id":42"#, with: #""campaign-id":101"#)) == ["campaign_id_out_of_range"])
        #expect(reasons(v3.replacingOccurrences(of: #""version":"3.0""#, with: #""version":"2.1""#)) == ["did_win_not_in_version", "fidelity_type_not_in_version"])
        let v1 = #"{"ad-network-id":"n","campaign-id":42,"app-id":1,"transaction-id":"t","attribution-signature":"x"}"#
        #expect(reasons(v1) == [])
        #expect((try? read(v1).get())?.version == "1.0")
    }

    @Test func anUnknownVersionIsStoredAndQuarantinedNotRefused() throws {
        let p = try read(v4("version", "\"5.0\"")).get()
        #expect(p.reasons == ["unknown_version"])
        #expect(!p.isCheckable)
        #expect(try read(v4("version", "5")).get().reasons.contains("version_not_a_string"))
    }

    @Test func theSignedMessageFollowsTheVersionsTable() throws {
        let p = try read(v4).get()
        let expected = ["4.0", "net.skadnetwork", "5239", "525463029", "t-1", "false", "example.com", "1", "true", "0"]
        #expect(p.signedMessage == Array(expected.joined(separator: "\u{2063}").utf8))
        // An optional field that is absent is left out, not written empty.
        let without = try read(v4("source-domain", nil)).get()
        #expect(without.signedMessage == Array(expected.filter { $0 != "example.com" }.joined(separator: "\u{2063}").utf8))
        // Unsigned fields change nothing.
        #expect(try read(v4("conversion-value", "1")).get().signedMessage == p.signedMessage)
        #expect(p.duplicateKey == "skadnetwork\u{1F}net.skadnetwork\u{1F}t-1\u{1F}0")
        #expect(p.campaign == "5239")
    }

    @Test func versionsBefore2_1AreNotCheckable() throws {
        let v2 = #"{"version":"2.0","ad-network-id":"n","campaign-id":42,"app-id":1,"transaction-id":"t","redownload":true,"attribution-signature":"x"}"#
        #expect(try !read(v2).get().isCheckable)
        #expect(try read(v2.replacingOccurrences(of: "2.0", with: "2.1")).get().isCheckable)
    }
}
