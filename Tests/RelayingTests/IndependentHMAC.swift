import Foundation
import Signatures
import Testing

/// HMAC-SHA256 by another implementation than the one the relay uses (Python's `hmac`), so that
/// a test compares two, not one with itself.
enum IndependentHMAC {
    static func sha256Hex(key: [UInt8], message: [UInt8]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import hmac, hashlib, sys
            data = sys.stdin.buffer.read()
            n = int.from_bytes(data[:4], "big")
            print(hmac.new(data[4:4 + n], data[4 + n:], hashlib.sha256).hexdigest())
            """]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let length = UInt32(key.count)
        input.fileHandleForWriting.write(Data([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + key + message))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The relay's HMAC against RFC 4231's published vectors and against Python's.
@Suite struct MessageAuthenticationTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func rfc4231Vectors() {
        // Test case 1.
        #expect(Self.hex(MessageAuthentication.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Test case 2: a key shorter than the block.
        #expect(Self.hex(MessageAuthentication.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block, hashed first.
        #expect(Self.hex(MessageAuthentication.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 131),
                                                          message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func theSameAsPythonsOverRandomKeysAndMessages() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5 {
            let key = (0..<Int.random(in: 1...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let message = (0..<Int.random(in: 0...5000, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Self.hex(MessageAuthentication.hmacSHA256(key: key, message: message)) == (try IndependentHMAC.sha256Hex(key: key, message: message)))
        }
    }
}
