import AppConfiguration
import Foundation
import Testing

/// An Info.plist in XML around `body` (the members of its top dictionary).
func plist(_ body: String) -> [UInt8] {
    Array("""
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0"><dict>\(body)</dict></plist>
    """.utf8)
}

/// `AdAttributionKitConfigurations` holding `body`, and both endpoint keys naming app.example.
func configurations(_ body: String) -> [UInt8] {
    plist("""
    <key>AdAttributionKitConfigurations</key><dict>\(body)</dict>
    <key>NSAdvertisingAttributionReportEndpoint</key><string>https://app.example</string>
    <key>AttributionCopyEndpoint</key><string>https://app.example</string>
    """)
}

func windows(_ body: String) -> [UInt8] {
    configurations("<key>AttributionWindows</key><dict>\(body)</dict>")
}

func report(_ bytes: [UInt8], served: Set<String>? = ["app.example"]) throws -> InfoPlistReport {
    let (list, format) = try PropertyList.read(bytes)
    return InfoPlistCheck(servedSites: served).check(list, format: format)
}

func fixture(_ name: String) throws -> [UInt8] {
    let url = try #require(Bundle.module.url(forResource: "Resources/\(name)", withExtension: nil))
    return Array(try Data(contentsOf: url))
}

extension InfoPlistReport {
    func finding(_ key: String) -> PlistFinding? { findings.first { $0.key == key } }
    func window(_ scope: String) -> EffectiveWindows? { windows.first { $0.scope == scope } }
}

@Suite struct PrecedenceTests {
    /// Apple's example: `global` sets views to 3 days; `com.apple.test.itms11.2` sets clicks to 5
    /// days and ignores views. That network therefore gets clicks 5 (its own), views 3 (global);
    /// every other network clicks 30 (system default) and views 3 (global).
    @Test(arguments: ["seed-precedence.xml.plist", "seed-precedence.binary.plist"])
    func theSeedsExample(file: String) throws {
        let result = try report(try fixture(file))
        #expect(result.format == (file.contains("binary") ? .binary : .xml))
        #expect(result.findings == [], "\(result.findings)")
        let global = try #require(result.window("global"))
        #expect(global.click == EffectiveSetting(30, from: .systemDefault))
        #expect(global.view == EffectiveSetting(3, from: .global))
        let network = try #require(result.window("com.apple.test.itms11.2"))
        #expect(network.click == EffectiveSetting(5, from: .adNetwork))
        #expect(network.view == EffectiveSetting(3, from: .global))
        #expect(network.ignoreInteractionType == "view")
        #expect(result.cooldowns.install == EffectiveSetting(24, from: .global))
        #expect(result.cooldowns.reengagement == EffectiveSetting(nil, from: .systemDefault))
        #expect(result.reengagementPostbackCopies == true)
        #expect(result.skAdNetworkIDs == ["cstr6suwn9.skadnetwork", "4fzdc2evr5.skadnetwork"])
        #expect(result.endpoints.map(\.served) == [true, true])
    }

    @Test func withNothingSetEveryValueIsTheSystemDefault() throws {
        let result = try report(configurations(""))
        #expect(result.windows == [EffectiveWindows(scope: "global", click: EffectiveSetting(30, from: .systemDefault),
                                                    view: EffectiveSetting(1, from: .systemDefault), ignoreInteractionType: nil)])
        #expect(result.errors == 0)
    }

    @Test func anAdNetworksOwnValueBeatsGlobal() throws {
        let result = try report(windows("""
            <key>global</key><dict><key>install</key><dict><key>click</key><integer>10</integer><key>view</key><integer>2</integer></dict></dict>
            <key>example123.skadnetwork</key><dict><key>install</key><dict><key>view</key><integer>7</integer></dict></dict>
            """))
        let network = try #require(result.window("example123.skadnetwork"))
        #expect(network.click == EffectiveSetting(10, from: .global))
        #expect(network.view == EffectiveSetting(7, from: .adNetwork))
    }

    /// A value the device cannot use is reported and treated as absent: the next level applies.
    @Test func anInvalidValueFallsBackToTheNextLevel() throws {
        let result = try report(windows("""
            <key>global</key><dict><key>install</key><dict><key>view</key><integer>5</integer></dict></dict>
            <key>example123.skadnetwork</key><dict><key>install</key><dict><key>view</key><integer>9</integer></dict></dict>
            """))
        #expect(result.window("example123.skadnetwork")?.view == EffectiveSetting(5, from: .global))
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.example123.skadnetwork.install.view")?.rule == "out_of_range")
    }
}

@Suite struct WindowRuleTests {
    static let path = "AdAttributionKitConfigurations.AttributionWindows.global.install."

    @Test(arguments: [("click", 1, true), ("click", 30, true), ("click", 0, false), ("click", 31, false),
                      ("view", 1, true), ("view", 7, true), ("view", 0, false), ("view", 8, false)])
    func ranges(key: String, days: Int, valid: Bool) throws {
        let result = try report(windows("<key>global</key><dict><key>install</key><dict><key>\(key)</key><integer>\(days)</integer></dict></dict>"))
        let finding = result.finding(Self.path + key)
        #expect((finding == nil) == valid, "\(result.findings)")
        if !valid {
            #expect(finding?.rule == "out_of_range" && finding?.severity == .error)
            #expect(finding?.hint == String(days < 1 ? 1 : (key == "click" ? 30 : 7)))
        }
        let effective = try #require(result.window("global"))
        #expect((key == "click" ? effective.click : effective.view).source == (valid ? .global : .systemDefault))
    }

    @Test func numbersMustBeWholeNumbers() throws {
        let result = try report(windows("""
            <key>global</key><dict><key>install</key><dict><key>click</key><string>7</string><key>view</key><real>2.0</real></dict></dict>
            """))
        #expect(result.finding(Self.path + "click")?.rule == "wrong_type")
        #expect(result.finding(Self.path + "click")?.hint == "<integer>7</integer>")
        #expect(result.finding(Self.path + "view")?.rule == "wrong_type")
        #expect(result.finding(Self.path + "view")?.hint == "<integer>2</integer>")
    }

    @Test func ignoreInteractionTypeIsPerAdNetworkOnly() throws {
        let result = try report(windows("""
            <key>global</key><dict><key>install</key><dict><key>ignoreInteractionType</key><string>view</string></dict></dict>
            <key>example123.skadnetwork</key><dict><key>install</key><dict><key>ignoreInteractionType</key><string>tap</string></dict></dict>
            <key>other.skadnetwork</key><dict><key>install</key><dict><key>ignoreInteractionType</key><string>Click</string></dict></dict>
            """))
        #expect(result.finding(Self.path + "ignoreInteractionType")?.rule == "wrong_place")
        let tap = result.finding("AdAttributionKitConfigurations.AttributionWindows.example123.skadnetwork.install.ignoreInteractionType")
        #expect(tap?.rule == "invalid_value" && tap?.hint == nil)
        let capital = result.finding("AdAttributionKitConfigurations.AttributionWindows.other.skadnetwork.install.ignoreInteractionType")
        #expect(capital?.rule == "invalid_value" && capital?.hint == "click")
        #expect(result.window("example123.skadnetwork")?.ignoreInteractionType == nil)
    }

    @Test func aWindowForAnIgnoredTypeIsPointless() throws {
        let result = try report(windows("""
            <key>example123.skadnetwork</key><dict><key>install</key><dict><key>ignoreInteractionType</key><string>view</string><key>view</key><integer>3</integer></dict></dict>
            """))
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.example123.skadnetwork.install.view")?.rule == "window_of_ignored_type")
        #expect(result.errors == 0)
    }

    @Test func keysOneLevelOffAreInTheWrongPlace() throws {
        let result = try report(plist("""
            <key>AttributionWindows</key><dict/>
            <key>AdAttributionKitConfigurations</key><dict>
              <key>global</key><dict/>
              <key>AttributionWindows</key><dict>
                <key>install</key><dict/>
                <key>global</key><dict><key>click</key><integer>3</integer></dict>
                <key>Global</key><dict><key>install</key><dict><key>view</key><integer>2</integer></dict></dict>
              </dict>
            </dict>
            """))
        #expect(result.finding("AttributionWindows")?.rule == "wrong_place")
        #expect(result.finding("AdAttributionKitConfigurations.global")?.rule == "wrong_place")
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.install")?.rule == "wrong_place")
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.global.click")?.rule == "wrong_place")
        let global = result.finding("AdAttributionKitConfigurations.AttributionWindows.Global")
        #expect(global?.rule == "misspelled_key" && global?.hint == "global")
        // Read as an ad network, since that is what the device does with it.
        #expect(result.window("global")?.view.source == .systemDefault)
        #expect(result.window("Global")?.view == EffectiveSetting(2, from: .adNetwork))
    }

    @Test func anAdNetworkIdWithCapitalsMatchesNoNetwork() throws {
        let result = try report(windows("<key>Example123.SKAdNetwork</key><dict><key>install</key><dict><key>click</key><integer>5</integer></dict></dict>"))
        let finding = try #require(result.finding("AdAttributionKitConfigurations.AttributionWindows.Example123.SKAdNetwork"))
        #expect(finding.rule == "ad_network_id_form" && finding.severity == .warning && finding.hint == "example123.skadnetwork")
        #expect(result.findings.count == 1)
    }

    @Test func unknownKeysAreWarningsNotErrors() throws {
        let result = try report(windows("<key>global</key><dict><key>reengagement</key><dict/><key>install</key><dict/></dict>"))
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.global.reengagement")?.severity == .warning)
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows.global.install")?.rule == "empty")
        #expect(result.errors == 0)
    }

    @Test func aDictionaryOfTheWrongTypeIsAnError() throws {
        let result = try report(configurations("<key>AttributionWindows</key><array/>"))
        #expect(result.finding("AdAttributionKitConfigurations.AttributionWindows")?.rule == "wrong_type")
    }
}

@Suite struct CooldownRuleTests {
    static let path = "AdAttributionKitConfigurations.AttributionCooldown."

    @Test(arguments: [(0, true), (720, true), (721, false), (-1, false)])
    func ranges(hours: Int, valid: Bool) throws {
        let result = try report(configurations("""
            <key>AttributionCooldown</key><dict><key>install-cooldown-hours</key><integer>\(hours)</integer>
            <key>re-engagement-cooldown-hours</key><integer>\(hours)</integer></dict>
            """))
        #expect((result.finding(Self.path + "install-cooldown-hours") == nil) == valid)
        #expect((result.finding(Self.path + "re-engagement-cooldown-hours") == nil) == valid)
        #expect(result.cooldowns.reengagement == (valid ? EffectiveSetting(hours, from: .global) : EffectiveSetting(nil, from: .systemDefault)))
    }

    /// Both spellings exist in Apple's material; the documented one is read, the slide's is flagged.
    @Test func theSlideSpellingIsFlaggedWithAHint() throws {
        let result = try report(configurations("<key>AttributionCooldown</key><dict><key>reengagement-cooldown-hours</key><integer>12</integer></dict>"))
        let finding = try #require(result.finding(Self.path + "reengagement-cooldown-hours"))
        #expect(finding.rule == "undocumented_spelling" && finding.severity == .warning)
        #expect(finding.hint == "re-engagement-cooldown-hours")
        #expect(result.cooldowns.reengagement.source == .systemDefault)
    }

    @Test func aWindowKeyInTheCooldownIsInTheWrongPlace() throws {
        let result = try report(configurations("<key>AttributionCooldown</key><dict><key>install</key><dict/></dict>"))
        #expect(result.finding(Self.path + "install")?.rule == "wrong_place")
    }
}

@Suite struct EndpointKeyTests {
    func endpoint(_ url: String, served: Set<String>? = ["app.example"]) throws -> (EndpointCheck?, [PlistFinding]) {
        let result = try report(plist("<key>AttributionCopyEndpoint</key><string>\(url)</string>"), served: served)
        return (result.endpoints.first { $0.key == "AttributionCopyEndpoint" }, result.findings.filter { $0.key == "AttributionCopyEndpoint" })
    }

    @Test func aServedHTTPSDomainPasses() throws {
        let (check, findings) = try endpoint("https://app.example")
        #expect(findings == [] && check?.site == "app.example" && check?.served == true)
    }

    @Test func aSiteThisEndpointDoesNotServeIsAnError() throws {
        let (check, findings) = try endpoint("https://elsewhere.example")
        #expect(check?.served == false && findings.map(\.rule) == ["site_not_served"])
        #expect(findings.first?.message.contains("app.example") == true)
    }

    @Test func withoutServedSitesOnlyTheFormIsChecked() throws {
        let (check, findings) = try endpoint("https://elsewhere.example", served: nil)
        #expect(check?.served == nil && findings == [])
    }

    @Test(arguments: [("http://app.example", "not_https"), ("app.example", "not_a_url"), ("https://192.0.2.1", "not_registrable_domain"),
                      ("https://co.uk", "not_registrable_domain")])
    func malformed(url: String, rule: String) throws {
        let (_, findings) = try endpoint(url)
        #expect(findings.map(\.rule) == [rule])
        #expect(findings.first?.severity == .error)
    }

    @Test func aSubdomainOrPathIsIgnoredByTheDevice() throws {
        let (check, findings) = try endpoint("https://www.app.example/postbacks")
        #expect(check?.site == "app.example" && check?.served == true)
        #expect(Set(findings.map(\.rule)) == ["subdomain_ignored", "path_ignored"])
        #expect(findings.allSatisfy { $0.severity == .warning && $0.hint == "https://app.example" })
    }

    @Test func missingEndpointKeysAreWarnings() throws {
        let result = try report(plist(""))
        #expect(result.findings.map(\.rule) == ["missing_key", "missing_key"])
        #expect(result.errors == 0)
    }

    @Test func theReengagementOptInNeedsTheCopyEndpoint() throws {
        let result = try report(plist("<key>EligibleForAdAttributionKitReengagementPostbackCopies</key><true/>"))
        #expect(result.reengagementPostbackCopies == true)
        #expect(result.finding("EligibleForAdAttributionKitReengagementPostbackCopies")?.rule == "copy_endpoint_missing")
        let typed = try report(plist("<key>EligibleForAdAttributionKitReengagementPostbackCopies</key><string>YES</string>"))
        #expect(typed.finding("EligibleForAdAttributionKitReengagementPostbackCopies")?.rule == "wrong_type")
        #expect(typed.reengagementPostbackCopies == nil)
    }
}

@Suite struct SKAdNetworkItemsTests {
    @Test func idsMustBeLowerCaseSKAdNetworkIds() throws {
        let result = try report(plist("""
            <key>SKAdNetworkItems</key><array>
              <dict><key>SKAdNetworkIdentifier</key><string>cstr6suwn9.skadnetwork</string></dict>
              <dict><key>SKAdNetworkIdentifier</key><string>CStr6suwn9.skadnetwork</string></dict>
              <dict><key>SKAdNetworkIdentifier</key><string>example.adattributionkit</string></dict>
              <dict><key>Identifier</key><string>x.skadnetwork</string></dict>
              <string>y.skadnetwork</string>
            </array>
            """))
        #expect(result.finding("SKAdNetworkItems[0].SKAdNetworkIdentifier") == nil)
        let upper = result.findings.filter { $0.key == "SKAdNetworkItems[1].SKAdNetworkIdentifier" }
        #expect(Set(upper.map(\.rule)) == ["invalid_skadnetwork_id", "duplicate"])
        #expect(upper.first { $0.rule == "invalid_skadnetwork_id" }?.hint == "cstr6suwn9.skadnetwork")
        #expect(result.finding("SKAdNetworkItems[2].SKAdNetworkIdentifier")?.rule == "invalid_skadnetwork_id")
        #expect(result.finding("SKAdNetworkItems[3].SKAdNetworkIdentifier")?.rule == "missing_key")
        #expect(result.finding("SKAdNetworkItems[4]")?.rule == "wrong_type")
    }

    @Test func theItemsMustBeAnArray() throws {
        let result = try report(plist("<key>SKAdNetworkItems</key><dict/>"))
        #expect(result.finding("SKAdNetworkItems")?.rule == "wrong_type")
    }
}

@Suite struct ReadingTests {
    /// Python wrote both files; Foundation reads them to the same report but for the format.
    @Test func binaryAndXMLGiveTheSameReport() throws {
        var binary = try report(try fixture("seed-precedence.binary.plist"))
        let xml = try report(try fixture("seed-precedence.xml.plist"))
        #expect(binary.format == .binary && xml.format == .xml)
        binary.format = .xml
        #expect(binary == xml)
    }

    @Test func booleansIntegersAndRealsStayApart() throws {
        let (list, _) = try PropertyList.read(plist("<key>a</key><true/><key>b</key><integer>1</integer><key>c</key><real>1</real><key>d</key><false/><key>e</key><integer>0</integer>"))
        #expect(list["a"] == .boolean(true) && list["b"] == .integer(1) && list["c"] == .real(1))
        #expect(list["d"] == .boolean(false) && list["e"] == .integer(0))
    }

    @Test(arguments: ["hello", "{\"AttributionCopyEndpoint\": \"https://app.example\"}", "<plist><dict><key>a</key></plist>", "bplist00garbage", ""])
    func somethingElseIsNotAPropertyList(text: String) {
        #expect(throws: PropertyList.NotAPropertyList.self) { try PropertyList.read(Array(text.utf8)) }
    }

    /// Found by the fuzzer: Foundation aborts the process on a binary plist holding a set of
    /// dictionaries. It is refused before Foundation sees it.
    @Test func aBinaryPlistWithASetIsRefusedBeforeFoundationReadsIt() throws {
        let bytes = try fixture("crash-nsset-of-dictionary.binary.plist")
        #expect { try PropertyList.read(bytes) } throws: { ($0 as? PropertyList.NotAPropertyList)?.detail.contains("set") == true }
    }

    /// A binary plist of arrays, object i holding the objects `members(i)` (2-byte references and
    /// offsets), with `top` as its root.
    func binaryPlist(objects: Int, top: Int, members: (Int) -> [Int]) -> [UInt8] {
        var data = Array("bplist00".utf8)
        var offsets: [Int] = []
        for i in 0..<objects {
            offsets.append(data.count)
            let refs = members(i)
            data.append(0xA0 | UInt8(refs.count))
            for ref in refs { data += [UInt8(ref >> 8), UInt8(ref & 0xFF)] }
        }
        let table = data.count
        for offset in offsets { data += [UInt8(offset >> 8), UInt8(offset & 0xFF)] }
        data += [0, 0, 0, 0, 0, 0, 2, 2]
        for value in [objects, top, table] { data += (0..<8).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        return data
    }

    /// 40 arrays, each holding the one before twice: 2^40 values in about 200 bytes.
    @Test func aBinaryPlistThatUnfoldsExponentiallyIsRefused() throws {
        let laughs = binaryPlist(objects: 40, top: 39) { $0 == 0 ? [] : [$0 - 1, $0 - 1] }
        #expect { try PropertyList.read(laughs) } throws: { ($0 as? PropertyList.NotAPropertyList)?.detail.contains("unfolds") == true }
        let shared = binaryPlist(objects: 10, top: 9) { $0 == 0 ? [] : [$0 - 1, $0 - 1] }
        #expect(throws: Never.self) { try PropertyList.read(shared) }  // 1,023 values: a plist like any other
    }

    @Test func aBinaryPlistThatHoldsItselfOrNestsTooDeepIsRefused() throws {
        let cycle = binaryPlist(objects: 2, top: 0) { $0 == 0 ? [1] : [0] }
        #expect { try PropertyList.read(cycle) } throws: { ($0 as? PropertyList.NotAPropertyList)?.detail.contains("hold themselves") == true }
        let deep = binaryPlist(objects: 255, top: 254) { $0 == 0 ? [] : [$0 - 1] }
        #expect(throws: Never.self) { try PropertyList.read(deep) }
        let deeper = binaryPlist(objects: 300, top: 299) { $0 == 0 ? [] : [$0 - 1] }
        #expect { try PropertyList.read(deeper) } throws: { ($0 as? PropertyList.NotAPropertyList)?.detail.contains("nested more than 256") == true }
    }

    @Test func aBinaryPlistWhoseTableDoesNotFitIsRefused() throws {
        var bytes = try fixture("seed-precedence.binary.plist")
        bytes[bytes.count - 32 + 6] = 9  // an offset width the format does not have
        #expect(throws: PropertyList.NotAPropertyList.self) { try PropertyList.read(bytes) }
        bytes = try fixture("seed-precedence.binary.plist")
        bytes[bytes.count - 1] = 0xFF  // the offset table past the end
        #expect(throws: PropertyList.NotAPropertyList.self) { try PropertyList.read(bytes) }
    }

    @Test func aRootThatIsNotADictionaryIsAnError() throws {
        let result = try report(Array(#"<?xml version="1.0"?><plist version="1.0"><array/></plist>"#.utf8))
        #expect(result.finding("(root)")?.rule == "wrong_type")
    }

    @Test func theTextReportShowsWhereEachValueComesFrom() throws {
        let text = try report(try fixture("seed-precedence.xml.plist")).text
        #expect(text.contains("0 errors, 0 warnings"))
        #expect(text.contains("com.apple.test.itms11.2  5      ad_network      3     global  view"), "\(text)")
        #expect(text.contains("install        24     global"))
    }
}
