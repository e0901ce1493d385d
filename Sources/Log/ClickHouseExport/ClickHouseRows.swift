import Primitives

/// A `SELECT`'s answer in `JSONEachRow`, read row by row. ClickHouse 18.16 writes 64-bit
/// integers as strings ("123") and later versions may too (`output_format_json_quote_64bit_integers`),
/// so a number is read from either.
public struct ClickHouseRow: Sendable {
    private let values: [String: JSONValue]

    init(_ members: [JSONMember]) {
        values = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    public func int(_ key: String) -> Int? {
        switch values[key] {
        case .number(let text)?, .string(let text)?: Int(text)
        default: nil
        }
    }

    /// A string column; nil for NULL.
    public func string(_ key: String) -> String? {
        switch values[key] {
        case .string(let text)?: text
        case .number(let text)?: text
        default: nil
        }
    }

    public func strings(_ key: String) -> [String] {
        guard case .array(let items)? = values[key] else { return [] }
        return items.compactMap { if case .string(let s) = $0 { s } else { nil } }
    }
}

extension ClickHouseClient {
    public enum QueryError: Error, CustomStringConvertible {
        case failed(String)
        case unreadable(String)

        public var description: String {
            switch self {
            case .failed(let reason): "ClickHouse did not answer the query: \(reason)"
            case .unreadable(let line): "ClickHouse's answer is not JSONEachRow: \(line.prefix(200))"
            }
        }
    }

    /// Runs `sql` (without a FORMAT clause) and reads its rows.
    public func rows(_ sql: String) throws(QueryError) -> [ClickHouseRow] {
        let text: String
        switch run(sql + " FORMAT JSONEachRow") {
        case .done(let body): text = body
        case .refused(let reason), .missingTable(let reason), .unavailable(let reason): throw .failed(reason)
        }
        var rows: [ClickHouseRow] = []
        for line in text.split(separator: "\n") where !line.isEmpty {
            guard case .object(let members)? = try? JSONParser(maxDepth: 8).parse(Array(line.utf8)) else { throw .unreadable(String(line)) }
            rows.append(ClickHouseRow(members))
        }
        return rows
    }

    /// Runs `sql` (without a FORMAT clause) and reads its rows as `TabSeparated`: the columns by
    /// position, unescaped. For answers of many rows, where JSONEachRow's keys and parsing cost
    /// more than ClickHouse took to count them.
    public func tabSeparatedRows(_ sql: String) throws(QueryError) -> [[String]] {
        let text: String
        switch run(sql + " FORMAT TabSeparated") {
        case .done(let body): text = body
        case .refused(let reason), .missingTable(let reason), .unavailable(let reason): throw .failed(reason)
        }
        var rows: [[String]] = []
        for line in text.utf8.split(separator: UInt8(ascii: "\n")) {
            rows.append(line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false).map(Self.unescaped))
        }
        return rows
    }

    /// A TabSeparated field: `\t`, `\n`, `\\` and the other backslash escapes undone.
    static func unescaped(_ field: Substring.UTF8View.SubSequence) -> String {
        guard field.contains(UInt8(ascii: "\\")) else { return String(decoding: field, as: UTF8.self) }
        var out: [UInt8] = []
        var escaped = false
        for byte in field {
            if escaped {
                switch byte {
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "0"): out.append(0)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                default: out.append(byte)
                }
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` as a SQL string literal.
    public static func quoted(_ text: String) -> String {
        var out = "'"
        for character in text.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\n": out += "\\n"
            case "\0": out += "\\0"
            default: out.unicodeScalars.append(character)
            }
        }
        return out + "'"
    }
}
