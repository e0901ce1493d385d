import Testing
@testable import AppConfiguration

/// What the XML screen finds before Foundation reads a plist.
@Suite struct XMLPlistScreenTests {
    @Test func keysGivenTwiceInOneDictAreFoundWithTheirPath() {
        let plist = #"""
        <plist version="1.0"><dict>
          <key>AdAttributionKitConfigurations</key><dict>
            <key>AttributionWindows</key><dict/>
            <key>AttributionCooldown</key><dict><key>install-cooldown-hours</key><integer>1</integer></dict>
            <key>AttributionWindows</key><array><dict><key>x</key><string/><key>x</key><true/></dict></array>
          </dict>
          <key>Other</key><string>same key in another dict is fine</string>
          <key>install-cooldown-hours</key><integer>2</integer>
        </dict></plist>
        """#
        let scan = XMLPlistScreen.scan(Array(plist.utf8))
        #expect(scan.refusal == nil)
        #expect(scan.duplicateKeys == ["AdAttributionKitConfigurations.AttributionWindows", "AdAttributionKitConfigurations.AttributionWindows.x"])
    }

    @Test func nestingIsRefusedPastSixtyFourLevelsOnly() {
        func nested(_ n: Int) -> [UInt8] {
            Array(("<plist>" + String(repeating: "<array>", count: n) + String(repeating: "</array>", count: n) + "</plist>").utf8)
        }
        #expect(XMLPlistScreen.refusal(nested(64)) == nil)
        #expect(XMLPlistScreen.refusal(nested(65)) != nil)
        #expect(XMLPlistScreen.refusal(nested(100_000)) != nil)
        // Empty containers and unclosed junk do not count as depth.
        #expect(XMLPlistScreen.refusal(Array(String(repeating: "<array/><dict />", count: 10_000).utf8)) == nil)
        #expect(XMLPlistScreen.refusal(Array("<arrayx><dictionary>".utf8)) == nil)
    }

    @Test func aBinaryPlistIsLeftToItsOwnScreen() {
        #expect(XMLPlistScreen.scan(BinaryPlistScreen.magic + Array(String(repeating: "<array>", count: 100).utf8)).refusal == nil)
    }
}
