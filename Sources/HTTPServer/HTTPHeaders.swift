/// Header fields in the order received. Names are compared case-insensitively, as RFC 9110 says.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    public mutating func add(name: String, value: String) {
        fields.append((name, value))
    }

    /// Replaces every field of that name with one.
    public mutating func replace(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    public mutating func remove(name: String) {
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    /// The first value of the field, if any.
    public subscript(name: String) -> String? {
        fields.first { Self.equalNames($0.name, name) }?.value
    }

    /// Every value of the field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.equalNames($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Whether a comma-separated field such as `Connection` lists `token`, case-insensitively.
    public func listContains(_ name: String, token: String) -> Bool {
        for field in fields where Self.equalNames(field.name, name) {
            // Most such fields hold one token; split only when there is a list.
            if Self.equalNames(field.value.trimmingSpaces, token) { return true }
            if field.value.utf8.contains(UInt8(ascii: ",")),
               field.value.split(separator: ",").contains(where: { Self.equalNames($0.trimmingSpaces, token) }) {
                return true
            }
        }
        return false
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Compares the UTF-8 bytes in place when both are contiguous (native and small strings
    /// are): this runs for every header of every request, and String indexing costs tens of
    /// instructions per byte.
    static func equalNames(_ a: String, _ b: String) -> Bool {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in equalBytes(x, y) }
        }
        if let fast, let result = fast { return result }
        return equalNames(a[...], b[...])
    }

    static func equalBytes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        for i in 0..<x.count where asciiLower(x[i]) != asciiLower(y[i]) { return false }
        return true
    }

    static func equalNames(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        // Index by index rather than zip: this runs for every header of every request.
        var i = x.startIndex, j = y.startIndex
        while i != x.endIndex {
            if asciiLower(x[i]) != asciiLower(y[j]) { return false }
            x.formIndex(after: &i)
            y.formIndex(after: &j)
        }
        return true
    }

    static func asciiLower(_ c: UInt8) -> UInt8 {
        c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") ? c | 0x20 : c
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    public var trimmingSpaces: Substring {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return Substring(s)
    }
}
