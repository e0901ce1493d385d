/// A parsed JSON value.
///
/// Numbers keep their literal text: a report's `source_id` must be an *integer literal*, and a
/// 10,000-digit number has to be rejected by its shape, never by overflowing a machine integer.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    // Only the containers are indirect: a whole enum marked `indirect` boxes every string and
    // number on the heap, which is most of a report's values.
    indirect case array([JSONValue])
    indirect case object([JSONMember])

    /// The JSON type name used in error messages ("got a string").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number(let text): JSONValue.isIntegerLiteral(text) ? "integer" : text == "-0" ? "-0 (negative zero)" : "non-integer number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// True for `0|-?[1-9][0-9]*`: no fraction, no exponent, and no `-0`, which no sender
    /// means and which an export that keeps the body would show as it came.
    public static func isIntegerLiteral(_ text: String) -> Bool {
        var digits = text.utf8[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard let first = digits.first else { return false }
        if first == UInt8(ascii: "0") { return digits.count == 1 && !negative }
        return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The value of an integer literal (`isIntegerLiteral`) that fits in an `Int`, read in one pass:
    /// every postback has half a dozen.
    public static func integerValue(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { bytes -> Int? in
            var i = 0
            let negative = bytes.first == UInt8(ascii: "-")
            if negative { i = 1 }
            guard i < bytes.count, bytes[i] != UInt8(ascii: "0") || (bytes.count == i + 1 && !negative) else { return nil }
            var value = 0
            while i < bytes.count {
                let digit = bytes[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                // Accumulated towards the sign, so that Int.min, whose magnitude is past Int.max, fits.
                let (next, o2) = negative ? times10.subtractingReportingOverflow(Int(digit)) : times10.addingReportingOverflow(Int(digit))
                guard !o1, !o2 else { return nil }
                value = next
                i += 1
            }
            return value
        }
    }

    /// Serializes compactly. Object member order is kept; numbers are written as received.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text): out += text
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// Writes `s` as a JSON string literal, escaping what RFC 8259 requires.
    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
        var needsEscape = false
        for byte in s.utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            needsEscape = true
            break
        }
        if !needsEscape {
            out += s
        } else {
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

/// One `"key": value` pair of a JSON object, in the order it was received.
public struct JSONMember: Sendable, Hashable {
    public var key: String
    public var value: JSONValue

    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }
}

extension JSONValue {
    /// `writeString`, into bytes: for writers that emit JSON at the rate records are exported.
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeEscaped(s.utf8, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// `writeString(String(decoding: utf8, as: UTF8.self))`, without making the String when the
    /// bytes are ASCII (as nearly every stored name is): other bytes may need repairing first.
    public static func writeString(utf8 bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeStringContent(utf8: bytes, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// The same without the quotes: for a string written in pieces (escaping goes byte by byte,
    /// so pieces escaped in turn are the whole escaped).
    public static func writeStringContent(utf8 bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            writeEscaped(bytes, to: &out)
        } else {
            writeEscaped(String(decoding: bytes, as: UTF8.self).utf8, to: &out)
        }
    }

    private static func writeEscaped(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]])
            default: out.append(byte)
            }
        }
    }
}
