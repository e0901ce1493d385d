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
