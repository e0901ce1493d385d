import Primitives

/// What makes two deliveries of one postback the same delivery. A device resends the same body;
/// a forwarder in between may reorder its keys or change its spacing, which is not a new fact.
/// So bodies are compared as JSON, members sorted by key, numbers as written.
public enum PostbackContent {
    /// FNV-1a 64 of the canonical form: stable across restarts, so that it can be stored with
    /// each postback and read back by replay.
    public static func fingerprint(_ body: [UInt8]) -> UInt64 {
        if let json = try? JSONParser().parse(body) { return fingerprint(json) }
        return fnv(String(decoding: body, as: UTF8.self))
    }

    /// The fingerprint of a body already parsed.
    public static func fingerprint(_ json: JSONValue) -> UInt64 {
        var text = ""
        canonical(json, into: &text)
        return fnv(text)
    }

    private static func fnv(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    static func canonical(_ value: JSONValue, into out: inout String) {
        switch value {
        case .object(let members):
            out += "{"
            for (i, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(member.key, to: &out)
                out += ":"
                canonical(member.value, into: &out)
            }
            out += "}"
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                canonical(item, into: &out)
            }
            out += "]"
        default:
            value.write(to: &out)
        }
    }
}
