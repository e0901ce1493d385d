/// RFC 4180 CSV, as every export and the summary write it.
public enum CSV {
    /// One field: quoted when it holds a comma, a quote or a line break; a text that a
    /// spreadsheet would take for a formula (`=`, `+`, `-`, `@` first, and not a number) gets a
    /// leading `'`, so that opening an export cannot run what a sender put in it.
    public static func field(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@".contains(first), Int(text) == nil { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A row of fields, with the line ending RFC 4180 asks for.
    public static func row(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}
