/// What an XML property list must be before Foundation reads it: nested no deeper than an
/// Info.plist ever is. Foundation's reader and `PropertyList(foundation:)` recurse once per
/// level on the caller's stack, and 64 KB of `<array>` is thousands of levels.
enum XMLPlistScreen {
    /// An Info.plist nests a handful of levels; this is far past any real one.
    static let maxDepth = 64

    /// Why `bytes` must not reach Foundation; nil when it may (binary plists are screened apart).
    static func refusal(_ bytes: [UInt8]) -> String? {
        guard !bytes.starts(with: BinaryPlistScreen.magic) else { return nil }
        var depth = 0
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<") else { i += 1; continue }
            let closing = i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/")
            let nameStart = closing ? i + 2 : i + 1
            guard opensContainer(bytes, at: nameStart) else { i += 1; continue }
            var end = nameStart
            while end < bytes.count && bytes[end] != UInt8(ascii: ">") { end += 1 }
            let selfClosing = end > nameStart && bytes[end - 1] == UInt8(ascii: "/")
            if closing {
                depth -= 1
            } else if !selfClosing {
                depth += 1
                if depth > maxDepth {
                    return "is an XML property list nested deeper than \(maxDepth) levels of <array> and <dict>; an Info.plist needs a few"
                }
            }
            i = end
        }
        return nil
    }

    /// `array` or `dict`, followed by the end of the tag's name.
    private static func opensContainer(_ bytes: [UInt8], at start: Int) -> Bool {
        for name in ["array", "dict"] {
            let n = name.utf8.count
            guard start + n < bytes.count, bytes[start..<start + n].elementsEqual(name.utf8) else { continue }
            let after = bytes[start + n]
            if after == UInt8(ascii: ">") || after == UInt8(ascii: "/") || after == 0x20 || after == 0x09 || after == 0x0A || after == 0x0D {
                return true
            }
        }
        return false
    }
}
