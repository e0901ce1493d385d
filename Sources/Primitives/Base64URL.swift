/// base64url (RFC 4648 §5) as PCM's token fields use it: URL-safe alphabet, no padding.
public enum Base64URL {
    public static func isValidUnpadded(_ text: String) -> Bool {
        let bytes = text.utf8
        // A single leftover character cannot encode a byte.
        guard !bytes.isEmpty, bytes.count % 4 != 1 else { return false }
        return bytes.allSatisfy { c in
            (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
    }
}
