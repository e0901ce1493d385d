import Foundation

/// What `InfoPlistCheck` found: the findings, and the settings the device will use.
public struct InfoPlistReport: Sendable, Equatable, Encodable {
    public var format: PropertyList.Format
    public var findings: [PlistFinding]
    /// `global` first (every ad network without its own entry), then each ad network named.
    public var windows: [EffectiveWindows]
    public var cooldowns: EffectiveCooldowns
    public var endpoints: [EndpointCheck]
    /// `EligibleForAdAttributionKitReengagementPostbackCopies`; nil when absent (no copies).
    public var reengagementPostbackCopies: Bool?
    public var skAdNetworkIDs: [String]

    public var errors: Int { findings.count { $0.severity == .error } }
    public var warnings: Int { findings.count { $0.severity == .warning } }

    enum CodingKeys: String, CodingKey {
        case format, findings, windows, cooldowns, endpoints, errors, warnings
        case reengagementPostbackCopies = "reengagement_postback_copies", skAdNetworkIDs = "skadnetwork_ids"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(format, forKey: .format)
        try c.encode(errors, forKey: .errors)
        try c.encode(warnings, forKey: .warnings)
        try c.encode(findings, forKey: .findings)
        try c.encode(windows, forKey: .windows)
        try c.encode(cooldowns, forKey: .cooldowns)
        try c.encode(endpoints, forKey: .endpoints)
        try c.encode(reengagementPostbackCopies, forKey: .reengagementPostbackCopies)
        try c.encode(skAdNetworkIDs, forKey: .skAdNetworkIDs)
    }

    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The report as a person reads it in a terminal.
    public var text: String {
        var out = "Info.plist (\(format.rawValue)): \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")\n"
        if !findings.isEmpty {
            out += "\n"
            for f in findings {
                out += "\(f.severity.rawValue.uppercased()) \(f.key): \(f.message) [\(f.rule)]\n"
                if let hint = f.hint { out += "      hint: \(hint)\n" }
            }
        }
        out += "\nAttribution windows for installs (days; ad network > global > system default)\n"
        var rows = [["scope", "click", "from", "view", "from", "ignores"]]
        for w in windows {
            rows.append([w.scope, w.click.value.map(String.init) ?? "-", w.click.source.rawValue,
                         w.view.value.map(String.init) ?? "-", w.view.source.rawValue, w.ignoreInteractionType ?? "-"])
        }
        out += Self.table(rows)
        out += "\nCooldowns (hours)\n"
        out += Self.table([["after", "hours", "from"],
                           ["install", cooldowns.install.value.map(String.init) ?? "none", cooldowns.install.source.rawValue],
                           ["re-engagement", cooldowns.reengagement.value.map(String.init) ?? "none", cooldowns.reengagement.source.rawValue]])
        out += "\nEndpoints\n"
        var endpointRows = [["key", "site", "served here", "receives"]]
        for e in endpoints {
            endpointRows.append([e.key, e.site ?? "-", e.served.map { $0 ? "yes" : "NO" } ?? "not checked", e.receives])
        }
        out += Self.table(endpointRows)
        out += "\nRe-engagement postback copies: \(reengagementPostbackCopies.map { $0 ? "yes" : "no" } ?? "no (key absent)")\n"
        out += "SKAdNetworkItems: \(skAdNetworkIDs.count) ad network\(skAdNetworkIDs.count == 1 ? "" : "s")\n"
        return out
    }

    static func table(_ rows: [[String]]) -> String {
        var widths = [Int](repeating: 0, count: rows.map(\.count).max() ?? 0)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            "  " + row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
