#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A strict RFC 8259 JSON parser over raw bytes.
///
/// Written by hand rather than with JSONSerialization because the report path needs things the
/// Foundation parser does not give: duplicate keys are an error (two parsers may otherwise read
/// one body two ways), nesting depth is bounded (a 100,000-deep array must not overflow the
/// stack), numbers keep their literal text, and invalid UTF-8 is refused.
public struct JSONParser: Sendable {
    public struct Failure: Error, Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case syntax(String)
            case tooDeep(limit: Int)
            case duplicateKey(String)
            case invalidUTF8
        }
        public var kind: Kind
        /// Byte offset where the problem was noticed.
        public var offset: Int

        public var description: String {
            switch kind {
            case .syntax(let what): "invalid JSON at byte \(offset): \(what)"
            case .tooDeep(let limit): "JSON nested deeper than \(limit) levels at byte \(offset)"
            case .duplicateKey(let key): "duplicate object key \"\(key)\" at byte \(offset)"
            case .invalidUTF8: "invalid UTF-8 in a JSON string at byte \(offset)"
            }
        }
    }

    public var maxDepth: Int
    /// Strings expected again and again (a report's keys): returned shared instead of allocated.
    private var interned: [(bytes: [UInt8], string: String)]

    public init(maxDepth: Int = 32, interning strings: [String] = []) {
        self.maxDepth = maxDepth
        self.interned = strings.map { (Array($0.utf8), $0) }
    }

    public func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        try parse(bytes as? [UInt8] ?? Array(bytes))
    }

    public func parse(_ array: [UInt8]) throws(Failure) -> JSONValue {
        try array.withUnsafeBufferPointer { (buffer) throws(Failure) -> JSONValue in
            var scanner = Scanner(bytes: buffer, maxDepth: maxDepth, interned: interned)
            scanner.skipWhitespace()
            let value = try scanner.parseValue(depth: 0)
            scanner.skipWhitespace()
            if scanner.index != buffer.count {
                throw scanner.failure(.syntax("unexpected data after the top-level value"))
            }
            return value
        }
    }
}

private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    let interned: [(bytes: [UInt8], string: String)]
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, interned: [(bytes: [UInt8], string: String)]) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.interned = interned
    }

    /// The interned string equal to `bytes[range]`, if there is one.
    func internedString(_ range: Range<Int>) -> String? {
        for candidate in interned where candidate.bytes.count == range.count {
            if candidate.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress! + range.lowerBound, range.count) == 0 }) {
                return candidate.string
            }
        }
        return nil
    }

    func failure(_ kind: JSONParser.Failure.Kind) -> JSONParser.Failure {
        JSONParser.Failure(kind: kind, offset: index)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParser.Failure) -> JSONValue {
        guard let byte = current else { throw failure(.syntax("unexpected end of input")) }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure(.syntax("unexpected character"))
        }
    }

    mutating func expectLiteral(_ word: StaticString) throws(JSONParser.Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure(.syntax("unexpected end of input")) }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] {
            throw failure(.syntax("invalid literal"))
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParser.Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure(.tooDeep(limit: maxDepth)) }
        index += 1  // {
        var members: [JSONMember] = []
        members.reserveCapacity(12)  // a report has six to ten members, a postback about eleven: one allocation, not four
        var keys: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure(.syntax("expected a string key")) }
            let keyOffset = index
            let key = try parseString()
            // A linear scan beats hashing for the handful of keys a report has; byte counts first,
            // since comparing two different Strings costs far more and most keys differ in length.
            let duplicate: Bool
            if members.count < 16 {
                let length = key.utf8.count
                duplicate = members.contains { $0.key.utf8.count == length && $0.key == key }
            } else {
                if keys.isEmpty { keys = Set(members.map(\.key)) }
                duplicate = !keys.insert(key).inserted
            }
            if duplicate { throw JSONParser.Failure(kind: .duplicateKey(key), offset: keyOffset) }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure(.syntax("expected ':'")) }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONMember(key: key, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            case nil: throw failure(.syntax("unexpected end of input"))
            default: throw failure(.syntax("expected ',' or '}'"))
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParser.Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure(.tooDeep(limit: maxDepth)) }
        index += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(items)
            case nil: throw failure(.syntax("unexpected end of input"))
            default: throw failure(.syntax("expected ',' or ']'"))
            }
        }
    }

    mutating func parseNumber() throws(JSONParser.Failure) -> String {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw failure(.syntax("expected a digit")) }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = current, isDigit(next) { throw failure(.syntax("leading zero in a number")) }
        } else {
            while let c = current, isDigit(c) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let c = current, isDigit(c) else { throw failure(.syntax("expected a digit after '.'")) }
            while let c = current, isDigit(c) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let c = current, isDigit(c) else { throw failure(.syntax("expected a digit in the exponent")) }
            while let c = current, isDigit(c) { index += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    mutating func parseString() throws(JSONParser.Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes, all ASCII printable. Reports are made of these.
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                let s = internedString(start..<index)
                    ?? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if c == UInt8(ascii: "\\") || c < 0x20 || c >= 0x80 { break }
            index += 1
        }
        var scalars = String.UnicodeScalarView()
        for b in bytes[start..<index] { scalars.append(Unicode.Scalar(b)) }
        while true {
            guard index < bytes.count else { throw failure(.syntax("unterminated string")) }
            let c = bytes[index]
            switch c {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                index += 1
                scalars.append(try parseEscape())
            case 0..<0x20:
                throw failure(.syntax("unescaped control character in a string"))
            case 0x20..<0x80:
                scalars.append(Unicode.Scalar(c))
                index += 1
            default:
                scalars.append(try decodeUTF8Scalar())
            }
        }
    }

    mutating func parseEscape() throws(JSONParser.Failure) -> Unicode.Scalar {
        guard let c = current else { throw failure(.syntax("unterminated escape")) }
        index += 1
        switch c {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try parseHex4()
            if (0xD800...0xDBFF).contains(high) {
                guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure(.syntax("lone high surrogate"))
                }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure(.syntax("invalid low surrogate")) }
                let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                return Unicode.Scalar(value)!
            }
            guard let scalar = Unicode.Scalar(high) else { throw failure(.syntax("lone low surrogate")) }
            return scalar
        default:
            throw failure(.syntax("invalid escape"))
        }
    }

    mutating func parseHex4() throws(JSONParser.Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure(.syntax("truncated \\u escape")) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw failure(.syntax("invalid hex digit in \\u escape"))
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Decodes one multi-byte UTF-8 sequence, refusing overlong forms, surrogates and values past U+10FFFF.
    mutating func decodeUTF8Scalar() throws(JSONParser.Failure) -> Unicode.Scalar {
        let lead = bytes[index]
        let length: Int
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; value = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; value = UInt32(lead & 0x07)
        default: throw failure(.invalidUTF8)
        }
        guard index + length <= bytes.count else { throw failure(.invalidUTF8) }
        for i in 1..<length {
            let c = bytes[index + i]
            guard c & 0xC0 == 0x80 else { throw failure(.invalidUTF8) }
            value = value << 6 | UInt32(c & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum, let scalar = Unicode.Scalar(value) else { throw failure(.invalidUTF8) }
        index += length
        return scalar
    }
}
