/// Header fields in the order received. Names are compared case-insensitively, as RFC 9110 says.
///
/// The fields are kept as bytes, names and values back to back in one buffer: a request's
/// headers are mostly looked up by name or never read at all, and making two Strings for every
/// line of every head cost more than the rest of its parsing. A String is made only for a value
/// someone asks for.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    private var bytes: [UInt8] = []
    private var spans: [Span] = []

    /// Where one field lies in `bytes`: the name runs up to `valueStart`.
    private struct Span: Sendable, Equatable {
        var nameStart: Int32
        var valueStart: Int32
        var valueEnd: Int32
    }

    public init() {}

    /// Room for `fieldCount` fields of `byteCount` bytes in all, so that a parsed head fills
    /// its headers with one allocation for each buffer.
    init(reservingBytes byteCount: Int, fields fieldCount: Int) {
        bytes.reserveCapacity(byteCount)
        spans.reserveCapacity(fieldCount)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    public var count: Int { spans.count }

    public mutating func add(name: String, value: String) {
        let nameStart = bytes.count
        bytes.append(utf8: name)
        let valueStart = bytes.count
        bytes.append(utf8: value)
        spans.append(Span(nameStart: Int32(nameStart), valueStart: Int32(valueStart), valueEnd: Int32(bytes.count)))
    }

    /// Adds a field from bytes the parser has already checked.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        spans.append(Span(nameStart: Int32(nameStart), valueStart: Int32(valueStart), valueEnd: Int32(bytes.count)))
    }

    /// Replaces every field of that name with one.
    public mutating func replace(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    public mutating func remove(name: String) {
        guard spans.contains(where: { nameIs($0, name) }) else { return }
        let kept = fields.filter { !Self.equalNames($0.name, name) }
        self = HTTPHeaders()
        for field in kept { add(name: field.name, value: field.value) }
    }

    /// The first value of the field, if any.
    public subscript(name: String) -> String? {
        guard let span = spans.first(where: { nameIs($0, name) }) else { return nil }
        return string(Int(span.valueStart)..<Int(span.valueEnd))
    }

    /// Calls `body` with the bytes of the field's first value, without making a String; nil when
    /// there is no such field.
    public func withFirstValue<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        guard let span = spans.first(where: { nameIs($0, name) }) else { return nil }
        return try bytes.withUnsafeBufferPointer { b in
            try body(UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)]))
        }
    }

    /// How many fields have that name.
    func count(of name: String) -> Int {
        spans.reduce(0) { $0 + (nameIs($1, name) ? 1 : 0) }
    }

    /// Every value of the field, in order.
    public func values(_ name: String) -> [String] {
        spans.filter { nameIs($0, name) }.map { string(Int($0.valueStart)..<Int($0.valueEnd)) }
    }

    public func contains(_ name: String) -> Bool {
        spans.contains { nameIs($0, name) }
    }

    /// Whether a comma-separated field such as `Connection` lists `token`, case-insensitively.
    public func listContains(_ name: String, token: String) -> Bool {
        var token = token
        return token.withUTF8 { t in
            bytes.withUnsafeBufferPointer { b in
                for span in spans where nameIs(span, name) {
                    var start = Int(span.valueStart)
                    let end = Int(span.valueEnd)
                    while start <= end {
                        var stop = start
                        while stop < end && b[stop] != UInt8(ascii: ",") { stop += 1 }
                        var i = start, j = stop
                        while i < j && (b[i] == 0x20 || b[i] == 0x09) { i += 1 }
                        while j > i && (b[j - 1] == 0x20 || b[j - 1] == 0x09) { j -= 1 }
                        if Self.equalBytes(UnsafeBufferPointer(rebasing: b[i..<j]), t) { return true }
                        start = stop + 1
                    }
                }
                return false
            }
        }
    }

    /// The fields as Strings, in order.
    public var fields: [(name: String, value: String)] {
        spans.map { (string(Int($0.nameStart)..<Int($0.valueStart)), string(Int($0.valueStart)..<Int($0.valueEnd))) }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Calls `body` with each field's name and value bytes, in order: how a response's headers
    /// are written without making a String.
    func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        bytes.withUnsafeBufferPointer { b in
            for span in spans {
                body(UnsafeBufferPointer(rebasing: b[Int(span.nameStart)..<Int(span.valueStart)]),
                     UnsafeBufferPointer(rebasing: b[Int(span.valueStart)..<Int(span.valueEnd)]))
            }
        }
    }

    /// The same fields, in the same order, byte for byte: how a connection knows that a response
    /// carries the headers of the one before and can reuse its head. Responses built from one
    /// constant share their buffers, which Array's `==` compares first.
    func sameFields(as other: HTTPHeaders) -> Bool {
        bytes == other.bytes && spans == other.spans
    }

    private func string(_ range: Range<Int>) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    private func nameIs(_ span: Span, _ name: String) -> Bool {
        let start = Int(span.nameStart), end = Int(span.valueStart)
        return bytes.withUnsafeBufferPointer { b in
            let stored = UnsafeBufferPointer(rebasing: b[start..<end])
            if let result = name.utf8.withContiguousStorageIfAvailable({ Self.equalBytes(stored, $0) }) { return result }
            return Array(name.utf8).withUnsafeBufferPointer { Self.equalBytes(stored, $0) }
        }
    }

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
