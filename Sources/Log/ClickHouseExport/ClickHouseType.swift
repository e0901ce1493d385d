import Primitives

/// The column types the export uses: only those that Debian's ClickHouse 18.16 and a current
/// ClickHouse both read the same way from `JSONEachRow` (no `DateTime64`, no `Bool`, no
/// `LowCardinality`).
public indirect enum ClickHouseType: Sendable, Equatable {
    case string
    case uint8, uint16, uint32, uint64
    case int64
    /// Seconds, read and shown in UTC whatever the server's time zone.
    case dateTime
    case arrayOfStrings
    case nullable(ClickHouseType)

    public var sql: String {
        switch self {
        case .string: "String"
        case .uint8: "UInt8"
        case .uint16: "UInt16"
        case .uint32: "UInt32"
        case .uint64: "UInt64"
        case .int64: "Int64"
        case .dateTime: "DateTime('UTC')"
        case .arrayOfStrings: "Array(String)"
        case .nullable(let inner): "Nullable(\(inner.sql))"
        }
    }

    /// Appends `value`'s literal (see `literal`); false, with `out` as it was, when it does not fit.
    public func appendLiteral(_ value: JSONValue, to out: inout [UInt8]) -> Bool {
        switch (self, value) {
        case (.nullable, .null):
            out.append(contentsOf: "null".utf8)
            return true
        case (.nullable(let inner), _): return inner.appendLiteral(value, to: &out)
        case (_, .null): return false
        case (.string, .string(let text)):
            JSONValue.writeString(text, to: &out)
            return true
        case (.dateTime, .string(let text)):
            guard let time = Timestamp(rfc3339: text) else { return false }
            return Self.appendDateTime(time, to: &out)
        // A JSON integer in range is its own literal: no text made again.
        case (.uint8, .number(let text)), (.uint16, .number(let text)), (.uint32, .number(let text)), (.uint64, .number(let text)):
            // Written again, not copied: JSON's `-0` reads as 0 here, and a ClickHouse refuses the minus sign.
            guard let number = UInt64(text), number <= maxUnsigned else { return false }
            out.append(contentsOf: String(number).utf8)
            return true
        default:
            guard let text = literal(value) else { return false }
            out.append(contentsOf: text.utf8)
            return true
        }
    }

    /// `"YYYY-MM-DD hh:mm:ss"`, from the RFC 3339 form's first 19 bytes; false outside DateTime's range.
    public static func appendDateTime(_ time: Timestamp, to out: inout [UInt8]) -> Bool {
        guard time.millisecondsSinceEpoch >= 0, time.millisecondsSinceEpoch < 4_294_967_296_000 else { return false }
        out.append(UInt8(ascii: "\""))
        let start = out.count
        time.appendRFC3339(to: &out)
        out.removeLast(out.count - start - 19)
        out[start + 10] = UInt8(ascii: " ")
        out.append(UInt8(ascii: "\""))
        return true
    }

    /// `value` as this type's JSON literal for `JSONEachRow`, or nil when it does not fit (a
    /// number out of range, an object for a number): the row then keeps it under `extra` and the
    /// column takes its default, so that one odd value never makes ClickHouse refuse a batch.
    /// A JSON null fits only a nullable column.
    public func literal(_ value: JSONValue) -> String? {
        switch (self, value) {
        case (.nullable, .null): return "null"
        case (.nullable(let inner), _): return inner.literal(value)
        case (_, .null): return nil
        case (.string, .string(let text)): return Self.quoted(text)
        case (.string, .number(let text)): return Self.quoted(text)
        case (.string, .bool(let flag)): return flag ? "\"true\"" : "\"false\""
        case (.string, _): return Self.quoted(value.serialized())
        case (.uint8, _): return Self.unsigned(value, max: UInt64(UInt8.max))
        case (.uint16, _): return Self.unsigned(value, max: UInt64(UInt16.max))
        case (.uint32, _): return Self.unsigned(value, max: UInt64(UInt32.max))
        case (.uint64, _): return Self.unsigned(value, max: UInt64.max)
        case (.int64, .number(let text)): return Int64(text).map(String.init)
        case (.int64, _): return nil
        case (.dateTime, .string(let text)):
            guard let time = Timestamp(rfc3339: text) else { return nil }
            return Self.dateTime(time)
        case (.dateTime, _): return nil
        case (.arrayOfStrings, .array(let items)):
            return "[" + items.map { item in
                if case .string(let text) = item { return Self.quoted(text) }
                return Self.quoted(item.serialized())
            }.joined(separator: ",") + "]"
        case (.arrayOfStrings, _): return nil
        }
    }

    private var maxUnsigned: UInt64 {
        switch self {
        case .uint8: UInt64(UInt8.max)
        case .uint16: UInt64(UInt16.max)
        case .uint32: UInt64(UInt32.max)
        default: UInt64.max
        }
    }

    /// Integers only, as JSON writes them; booleans as 0 and 1 (18.16 has no `Bool`).
    private static func unsigned(_ value: JSONValue, max: UInt64) -> String? {
        switch value {
        case .bool(let flag): return flag ? "1" : "0"
        case .number(let text):
            guard let number = UInt64(text), number <= max else { return nil }
            return String(number)
        default: return nil
        }
    }

    /// `"YYYY-MM-DD hh:mm:ss"`: the text form both versions read for `DateTime('UTC')`.
    public static func dateTime(_ time: Timestamp) -> String? {
        var out: [UInt8] = []
        guard appendDateTime(time, to: &out) else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        JSONValue.writeString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// One column of an exported table: its name (the protocol's own word, as the NDJSON export has
/// it) and its type.
public struct ClickHouseColumn: Sendable, Equatable {
    public var name: String
    public var type: ClickHouseType

    /// `name` is one of the project's own column names: letters, digits, `_` and `-`.
    public init(_ name: String, _ type: ClickHouseType) {
        self.name = name
        self.type = type
    }

    /// The name as SQL writes it: backquoted, since the protocols' words have dashes.
    public var quotedName: String { "`" + name + "`" }
}
