/// What Foundation does not say about an XML property list, found by one pass over its tags
/// before Foundation reads it:
/// - nesting deeper than an Info.plist ever is: refused, since Foundation's reader and
///   `PropertyList(foundation:)` recurse once per level on the caller's stack, and 64 KB of
///   `<array>` is thousands of levels;
/// - a key given twice in one `<dict>`: Foundation keeps one of the two values without a word,
///   so which setting the device uses is anyone's guess. The check reports each as an error.
enum XMLPlistScreen {
    /// An Info.plist nests a handful of levels; this is far past any real one.
    static let maxDepth = 64

    struct Scan {
        var refusal: String?
        /// Each key found twice in one dict, as its path (`AdAttributionKitConfigurations.AttributionWindows`).
        var duplicateKeys: [String] = []
    }

    /// Why `bytes` must not reach Foundation; nil when it may (binary plists are screened apart).
    static func refusal(_ bytes: [UInt8]) -> String? { scan(bytes).refusal }

    static func scan(_ bytes: [UInt8]) -> Scan {
        var result = Scan()
        guard !bytes.starts(with: BinaryPlistScreen.magic) else { return result }
        // One entry per open container: its path, and for a dict the keys seen in it.
        var open: [(path: String, isDict: Bool, keys: Set<String>, lastKey: String?)] = []
        var i = 0
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<") else { i += 1; continue }
            let closing = i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/")
            let nameStart = closing ? i + 2 : i + 1
            var end = nameStart
            while end < bytes.count && bytes[end] != UInt8(ascii: ">") { end += 1 }
            let selfClosing = end > nameStart && bytes[end - 1] == UInt8(ascii: "/")
            let name = tagName(bytes, from: nameStart, to: end)
            switch name {
            case "dict", "array":
                if closing {
                    if !open.isEmpty { open.removeLast() }
                } else if !selfClosing {
                    guard open.count < maxDepth else {
                        result.refusal = "is an XML property list nested deeper than \(maxDepth) levels of <array> and <dict>; an Info.plist needs a few"
                        return result
                    }
                    // A dict's child is named by its key; an array's by the array's own path.
                    let path = open.last.map { p in p.isDict ? [p.path, p.lastKey ?? "?"].filter { !$0.isEmpty }.joined(separator: ".") : p.path } ?? ""
                    open.append((path, name == "dict", [], nil))
                }
            case "key" where !closing && !selfClosing:
                let (key, textEnd) = keyText(bytes, from: min(end + 1, bytes.count))
                if var dict = open.last, dict.isDict {
                    if !dict.keys.insert(key).inserted {
                        result.duplicateKeys.append([dict.path, key].filter { !$0.isEmpty }.joined(separator: "."))
                    }
                    dict.lastKey = key
                    open[open.count - 1] = dict
                }
                end = textEnd - 1
            default:
                break
            }
            i = end + 1
        }
        return result
    }

    /// A key's text as Foundation reads it, up to its `</key>`: entities (`&amp;`, `&#x52;`) and
    /// CDATA sections decoded, so that one key written two ways is still one key. Returns the
    /// text and where `</key>` begins.
    static func keyText(_ bytes: [UInt8], from start: Int) -> (String, Int) {
        var text: [UInt8] = []
        var i = start
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "<") {
                let cdata = Array("<![CDATA[".utf8)
                guard bytes[i...].starts(with: cdata) else { break }
                i += cdata.count
                while i < bytes.count && !bytes[i...].starts(with: Array("]]>".utf8)) { text.append(bytes[i]); i += 1 }
                i += 3
            } else if c == UInt8(ascii: "&"), let semicolon = bytes[i...].prefix(12).firstIndex(of: UInt8(ascii: ";")) {
                let name = String(decoding: bytes[(i + 1)..<semicolon], as: UTF8.self)
                let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"][name]
                let scalar = name.hasPrefix("#x") || name.hasPrefix("#X") ? UInt32(name.dropFirst(2), radix: 16)
                    : name.hasPrefix("#") ? UInt32(name.dropFirst(), radix: 10) : nil
                if let decoded = named ?? scalar.flatMap(Unicode.Scalar.init).map({ String(Character($0)) }) {
                    text.append(contentsOf: decoded.utf8)
                } else {
                    text.append(contentsOf: bytes[i...semicolon])
                }
                i = semicolon + 1
            } else {
                text.append(c)
                i += 1
            }
        }
        return (String(decoding: text, as: UTF8.self), min(i, bytes.count))
    }

    /// The tag's name: letters up to a space, `/` or `>`.
    private static func tagName(_ bytes: [UInt8], from start: Int, to end: Int) -> String {
        var stop = start
        while stop < end, bytes[stop] != 0x20, bytes[stop] != 0x09, bytes[stop] != 0x0A, bytes[stop] != 0x0D,
              bytes[stop] != UInt8(ascii: "/") { stop += 1 }
        guard stop - start <= 8 else { return "" }
        return String(decoding: bytes[start..<stop], as: UTF8.self)
    }
}
