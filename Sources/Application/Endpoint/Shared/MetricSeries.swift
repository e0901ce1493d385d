/// One unlabelled Prometheus series as `/metrics` writes it: its HELP and TYPE lines, then its
/// value. Labelled families are written where they are built, their values through `label`.
enum MetricSeries {
    static func gauge(_ name: String, _ help: String, _ value: Int) -> String {
        series(name, "gauge", help, value)
    }

    static func counter(_ name: String, _ help: String, _ value: Int) -> String {
        series(name, "counter", help, value)
    }

    private static func series(_ name: String, _ type: String, _ help: String, _ value: Int) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
    }

    /// A Prometheus label value: backslash, quote and newline escaped, and short.
    static func label(_ text: String) -> String {
        var out = ""
        for character in text.prefix(300) {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n", "\r": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}
