/// The DER around a PCM token key: writing the SubjectPublicKeyInfo WebKit expects, and finding the
/// RSA key inside one. Encoding only; the cryptography is swift-crypto's.
enum TokenKeyEncoding {
    /// AlgorithmIdentifier { id-RSASSA-PSS (1.2.840.113549.1.1.10), RSASSA-PSS-params {
    /// [0] sha384, [1] mgf1 with sha384, [2] saltLength 48 } }, hash identifiers without NULL
    /// parameters, byte for byte as in WebKit's example key.
    static let pssAlgorithm: [UInt8] = [
        0x30, 0x3D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0A,
        0x30, 0x30,
        0xA0, 0x0D, 0x30, 0x0B, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
        0xA1, 0x1A, 0x30, 0x18, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x08,
        0x30, 0x0B, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
        0xA2, 0x03, 0x02, 0x01, 0x30,
    ]

    static func pssSubjectPublicKeyInfo(pkcs1: [UInt8]) -> [UInt8] {
        let bitString = [0x03] + length(pkcs1.count + 1) + [0x00] + pkcs1
        let content = pssAlgorithm + bitString
        return [0x30] + length(content.count) + content
    }

    /// The contents of the BIT STRING of a SubjectPublicKeyInfo, whatever its algorithm.
    static func publicKeyBits(ofSubjectPublicKeyInfo der: [UInt8]) -> [UInt8]? {
        guard let outer = element(der, at: 0, tag: 0x30), outer.end == der.count,
              let algorithm = element(der, at: outer.start, tag: 0x30),
              let bits = element(der, at: algorithm.end, tag: 0x03), bits.end == outer.end,
              bits.start < bits.end, der[bits.start] == 0x00 else { return nil }
        return Array(der[(bits.start + 1)..<bits.end])
    }

    /// The content range of the element with `tag` at `offset`, definite lengths only.
    private static func element(_ der: [UInt8], at offset: Int, tag: UInt8) -> (start: Int, end: Int)? {
        guard offset + 2 <= der.count, der[offset] == tag else { return nil }
        var i = offset + 1
        var count = Int(der[i]); i += 1
        if count & 0x80 != 0 {
            let octets = count & 0x7F
            guard (1...3).contains(octets), i + octets <= der.count else { return nil }
            count = 0
            for _ in 0..<octets { count = count << 8 | Int(der[i]); i += 1 }
        }
        guard i + count <= der.count else { return nil }
        return (i, i + count)
    }

    private static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        if n < 0x100 { return [0x81, UInt8(n)] }
        if n < 0x10000 { return [0x82, UInt8(n >> 8), UInt8(n & 0xFF)] }
        return [0x83, UInt8(n >> 16), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
    }
}
