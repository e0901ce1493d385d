import Primitives

/// What makes two deliveries of one postback the same delivery. A device resends the same body;
/// a forwarder in between may reorder its keys or change its spacing, which is not a new fact.
/// So bodies are compared as JSON, members sorted by key, numbers as written.
/// The fingerprint is stored with each postback, so its definition must never change.
public enum PostbackContent {
    /// FNV-1a 64 of the canonical form: stable across restarts, so that it can be stored with
    /// each postback and read back by replay.
    public static func fingerprint(_ body: [UInt8]) -> UInt64 {
        if let json = try? JSONParser().parse(body) { return fingerprint(json) }
        var hash = FNV()
        for byte in body { hash.add(byte) }
        return hash.value
    }

    /// The fingerprint of a body already parsed: FNV-1a over a walk of the value in which an
    /// object's members are hashed one by one and added up, so that their order cannot matter.
    /// No text is built and nothing is sorted: this runs for every postback.
    public static func fingerprint(_ json: JSONValue) -> UInt64 {
        var hash = FNV()
        walk(json, &hash)
        return hash.value
    }

    private struct FNV {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325

        mutating func add(_ byte: UInt8) {
            value ^= UInt64(byte)
            value = value &* 0x0000_0100_0000_01b3
        }

        mutating func add(_ text: String) {
            var text = text
            text.withUTF8 { for byte in $0 { add(byte) } }
            add(0)  // so that "ab","c" and "a","bc" differ
        }
    }

    private static func walk(_ value: JSONValue, _ hash: inout FNV) {
        switch value {
        case .null: hash.add(UInt8(ascii: "n"))
        case .bool(let b): hash.add(b ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .number(let text):
            hash.add(UInt8(ascii: "#"))
            hash.add(text)
        case .string(let s):
            hash.add(UInt8(ascii: "s"))
            hash.add(s)
        case .array(let items):
            hash.add(UInt8(ascii: "["))
            for item in items { walk(item, &hash) }
            hash.add(UInt8(ascii: "]"))
        case .object(let members):
            var sum: UInt64 = 0
            for member in members {
                var one = FNV()
                one.add(member.key)
                walk(member.value, &one)
                sum &+= one.value
            }
            hash.add(UInt8(ascii: "{"))
            withUnsafeBytes(of: sum.littleEndian) { for byte in $0 { hash.add(byte) } }
            hash.add(UInt8(ascii: "}"))
        }
    }
}
