import Foundation
import Primitives
import Testing

/// Public ids and admin tokens are written as hex without Foundation's formatter.
@Suite struct HexTests {
    @Test func everyByteIsTwoLowercaseDigits() {
        #expect(Hex.text([]) == "")
        #expect(Hex.text([0x00, 0x0f, 0x10, 0xab, 0xff]) == "000f10abff")
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.text(all) == all.map { String(format: "%02x", $0) }.joined())
    }
}
