import Foundation
import Primitives

/// The attribution keys of an app's Info.plist, checked the way the device reads them, because
/// the device says nothing when it ignores one: `AdAttributionKitConfigurations` (attribution
/// windows and cooldowns), the two endpoint keys, the re-engagement copies opt-in and
/// `SKAdNetworkItems`. A pure function of the plist and the sites this endpoint serves.
public struct InfoPlistCheck: Sendable {
    /// The sites this endpoint serves; nil when not known (the endpoints are then checked for
    /// form only).
    public var servedSites: Set<String>?
    public var publicSuffixList: PublicSuffixList

    public init(servedSites: Set<String>?, publicSuffixList: PublicSuffixList = .shipped) {
        self.servedSites = servedSites
        self.publicSuffixList = publicSuffixList
    }

    static let configurations = "AdAttributionKitConfigurations"
    static let windowsKey = "AttributionWindows"
    static let cooldownKey = "AttributionCooldown"
    static let reportEndpoint = "NSAdvertisingAttributionReportEndpoint"
    static let copyEndpoint = "AttributionCopyEndpoint"
    static let reengagementCopies = "EligibleForAdAttributionKitReengagementPostbackCopies"
    static let skAdNetworkItems = "SKAdNetworkItems"
    static let installCooldown = "install-cooldown-hours"
    static let reengagementCooldown = "re-engagement-cooldown-hours"
    /// The spelling of a WWDC slide; Apple's documentation writes `re-engagement-cooldown-hours`.
    static let slideSpelling = "reengagement-cooldown-hours"

    /// Where each key belongs, to explain a key found one level off.
    static let home: [String: String] = [
        windowsKey: configurations, cooldownKey: configurations,
        "global": "\(configurations).\(windowsKey)", "install": "\(configurations).\(windowsKey).<global or ad network id>",
        "click": "…\(windowsKey).<global or ad network id>.install", "view": "…\(windowsKey).<global or ad network id>.install",
        "ignoreInteractionType": "…\(windowsKey).<ad network id>.install",
        installCooldown: "\(configurations).\(cooldownKey)", reengagementCooldown: "\(configurations).\(cooldownKey)",
        reportEndpoint: "the top level of Info.plist", copyEndpoint: "the top level of Info.plist",
        reengagementCopies: "the top level of Info.plist", skAdNetworkItems: "the top level of Info.plist",
    ]

    /// Reads `bytes` and checks them: `check(_:format:)`, and each key given twice in one dict
    /// of an XML plist (Foundation keeps one of the values without a word).
    public func check(bytes: [UInt8]) throws(PropertyList.NotAPropertyList) -> InfoPlistReport {
        let (plist, format) = try PropertyList.read(bytes)
        let duplicates = format == .xml ? XMLPlistScreen.scan(bytes).duplicateKeys : []
        return check(plist, format: format, duplicateKeys: duplicates)
    }

    public func check(_ plist: PropertyList, format: PropertyList.Format, duplicateKeys: [String] = []) -> InfoPlistReport {
        var run = Run(check: self)
        for key in duplicateKeys {
            run.error(key, "duplicate_key", "appears twice in one dict; the device reads only one of the two values, so keep one")
        }
        run.walk(plist)
        return InfoPlistReport(format: format, findings: run.findings.sorted { ($0.severity, $0.key) < ($1.severity, $1.key) },
                               windows: run.windows(), cooldowns: run.cooldowns(), endpoints: run.endpoints,
                               reengagementPostbackCopies: run.reengagementCopies, skAdNetworkIDs: run.skAdNetworkIDs)
    }

    /// One pass over one plist: what it found, and the values it read on the way.
    struct Run {
        let check: InfoPlistCheck
        var findings: [PlistFinding] = []
        var global: (click: Int?, view: Int?) = (nil, nil)
        var networks: [String: (click: Int?, view: Int?, ignore: String?)] = [:]
        var cooldown: (install: Int?, reengagement: Int?) = (nil, nil)
        var endpoints: [EndpointCheck] = []
        var reengagementCopies: Bool?
        var skAdNetworkIDs: [String] = []

        mutating func error(_ key: String, _ rule: String, _ message: String, hint: String? = nil) {
            findings.append(PlistFinding(.error, key: key, rule: rule, message, hint: hint))
        }

        mutating func warning(_ key: String, _ rule: String, _ message: String, hint: String? = nil) {
            findings.append(PlistFinding(.warning, key: key, rule: rule, message, hint: hint))
        }

        mutating func dictionary(_ value: PropertyList, at key: String) -> [String: PropertyList]? {
            guard case .dictionary(let members) = value else {
                error(key, "wrong_type", "must be a Dictionary; found \(value.typeName), which the device ignores")
                return nil
            }
            return members
        }

        /// A key that belongs elsewhere is an error (its setting is lost); anything else unknown
        /// is a warning, since Apple may add keys.
        mutating func unexpected(_ name: String, at path: String, expected: [String]) {
            let key = path + "." + name
            if let home = InfoPlistCheck.home[name] {
                error(key, "wrong_place", "\(name) has no effect here; it belongs in \(home)")
            } else if let near = expected.first(where: { $0.lowercased() == name.lowercased() }) {
                error(key, "misspelled_key", "\(name) is not a key the device reads; keys are case-sensitive", hint: near)
            } else {
                warning(key, "unknown_key", "\(name) is not a key the device is documented to read here; expected \(expected.joined(separator: ", "))")
            }
        }

        mutating func walk(_ plist: PropertyList) {
            guard case .dictionary(let top) = plist else {
                error("(root)", "wrong_type", "an Info.plist is a Dictionary; found \(plist.typeName)")
                return
            }
            for name in [InfoPlistCheck.windowsKey, InfoPlistCheck.cooldownKey] where top[name] != nil {
                error(name, "wrong_place", "\(name) has no effect at the top level; it belongs in \(InfoPlistCheck.configurations)")
            }
            if let configurations = top[InfoPlistCheck.configurations] {
                readConfigurations(configurations)
            }
            endpoint(top, InfoPlistCheck.reportEndpoint, receives: "SKAdNetwork postback copies and app-to-web PCM reports")
            endpoint(top, InfoPlistCheck.copyEndpoint, receives: "AdAttributionKit postback copies")
            readReengagementOptIn(top)
            readSKAdNetworkItems(top[InfoPlistCheck.skAdNetworkItems])
        }

        mutating func readConfigurations(_ value: PropertyList) {
            let path = InfoPlistCheck.configurations
            guard let members = dictionary(value, at: path) else { return }
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                switch name {
                case InfoPlistCheck.windowsKey: readWindows(value, at: path + "." + name)
                case InfoPlistCheck.cooldownKey: readCooldown(value, at: path + "." + name)
                default: unexpected(name, at: path, expected: [InfoPlistCheck.windowsKey, InfoPlistCheck.cooldownKey])
                }
            }
        }

        mutating func readWindows(_ value: PropertyList, at path: String) {
            guard let scopes = dictionary(value, at: path) else { return }
            for (scope, value) in scopes.sorted(by: { $0.key < $1.key }) {
                let key = path + "." + scope
                if InfoPlistCheck.home[scope] != nil, scope != "global" {
                    unexpected(scope, at: path, expected: ["global", "<ad network id>"])
                    continue
                }
                if scope != "global", scope.lowercased() == "global" {
                    error(key, "misspelled_key", "\(scope) is read as an ad network id, not as the global setting; keys are case-sensitive", hint: "global")
                }
                guard let members = dictionary(value, at: key) else { continue }
                var read: (click: Int?, view: Int?, ignore: String?) = (nil, nil, nil)
                for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                    guard name == "install" else {
                        unexpected(name, at: key, expected: ["install"])
                        continue
                    }
                    read = readInstall(value, at: key + ".install", global: scope == "global")
                }
                if scope == "global" {
                    global = (read.click, read.view)
                } else {
                    if scope.lowercased() != "global", scope.contains(where: { $0.isWhitespace || $0.isUppercase }) {
                        warning(key, "ad_network_id_form", "ad network ids are lower-case with no spaces, as the network registered it; this key matches no network", hint: scope.lowercased().trimmingCharacters(in: .whitespaces))
                    }
                    networks[scope] = read
                }
            }
        }

        mutating func readInstall(_ value: PropertyList, at path: String, global: Bool) -> (click: Int?, view: Int?, ignore: String?) {
            guard let members = dictionary(value, at: path) else { return (nil, nil, nil) }
            if members.isEmpty { warning(path, "empty", "an empty install dictionary changes nothing") }
            var read: (click: Int?, view: Int?, ignore: String?) = (nil, nil, nil)
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                let key = path + "." + name
                switch name {
                case "click": read.click = integer(value, at: key, in: 1...30, unit: "days", what: "a click impression stays eligible")
                case "view": read.view = integer(value, at: key, in: 1...7, unit: "days", what: "a view impression stays eligible")
                case "ignoreInteractionType":
                    if global {
                        error(key, "wrong_place", "the system does not recognize ignoreInteractionType in the global configuration; set it per ad network")
                        continue
                    }
                    guard case .string(let kind) = value else {
                        error(key, "wrong_type", "must be a String, click or view; found \(value.typeName)")
                        continue
                    }
                    guard kind == "click" || kind == "view" else {
                        error(key, "invalid_value", "must be click or view; found \"\(kind.prefix(40))\"", hint: ["click", "view"].first { $0 == kind.lowercased() })
                        continue
                    }
                    read.ignore = kind
                default: unexpected(name, at: path, expected: ["click", "view"] + (global ? [] : ["ignoreInteractionType"]))
                }
            }
            if let ignored = read.ignore, (ignored == "click" ? read.click : read.view) != nil {
                warning(path + "." + ignored, "window_of_ignored_type", "sets a \(ignored) window for an ad network whose \(ignored) impressions are ignored")
            }
            return read
        }

        mutating func readCooldown(_ value: PropertyList, at path: String) {
            guard let members = dictionary(value, at: path) else { return }
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                let key = path + "." + name
                switch name {
                case InfoPlistCheck.installCooldown:
                    cooldown.install = integer(value, at: key, in: 0...720, unit: "hours", what: "no new conversion follows an install")
                case InfoPlistCheck.reengagementCooldown:
                    cooldown.reengagement = integer(value, at: key, in: 0...720, unit: "hours", what: "no new conversion follows a re-engagement")
                case InfoPlistCheck.slideSpelling:
                    warning(key, "undocumented_spelling", "this spelling is from a WWDC slide; Apple's documentation spells the key re-engagement-cooldown-hours, which is the one this check reads",
                            hint: InfoPlistCheck.reengagementCooldown)
                default: unexpected(name, at: path, expected: [InfoPlistCheck.installCooldown, InfoPlistCheck.reengagementCooldown])
                }
            }
        }

        /// A whole number in range. Anything else is reported and treated as absent: the next
        /// level of the precedence then applies.
        mutating func integer(_ value: PropertyList, at key: String, in range: ClosedRange<Int>, unit: String, what: String) -> Int? {
            switch value {
            case .integer(let n) where range.contains(n): return n
            case .integer(let n):
                error(key, "out_of_range", "must be \(range.lowerBound)–\(range.upperBound) \(unit) (how long \(what)); found \(n)",
                      hint: String(min(max(n, range.lowerBound), range.upperBound)))
            case .real(let x):
                error(key, "wrong_type", "must be a whole number of \(unit); found the real number \(x)",
                      hint: Int(exactly: x).flatMap { range.contains($0) ? "<integer>\($0)</integer>" : nil })
            case .string(let text):
                error(key, "wrong_type", "must be a Number; found the String \"\(text.prefix(20))\"",
                      hint: Int(text).map { "<integer>\($0)</integer>" })
            default:
                error(key, "wrong_type", "must be a Number of \(unit); found \(value.typeName)")
            }
            return nil
        }

        mutating func endpoint(_ top: [String: PropertyList], _ name: String, receives: String) {
            guard let value = top[name] else {
                warning(name, "missing_key", "without it the device sends no \(receives) to any endpoint")
                return
            }
            var result = EndpointCheck(key: name, receives: receives)
            defer { endpoints.append(result) }
            guard case .string(let text) = value else {
                error(name, "wrong_type", "must be a String such as https://example.com; found \(value.typeName)")
                return
            }
            result.url = text
            guard let url = URLComponents(string: text), let scheme = url.scheme, let host = url.host, !host.isEmpty else {
                error(name, "not_a_url", "must be a URL such as https://example.com; found \"\(text.prefix(80))\"")
                return
            }
            guard scheme.lowercased() == "https" else {
                error(name, "not_https", "must use https; the device sends to https://\(host) only", hint: "https://\(host.lowercased())")
                return
            }
            let lower = host.lowercased()
            guard let registrable = check.publicSuffixList.registrableDomain(of: lower).map(String.init),
                  !SiteRules.isIPv4Literal(lower), !SiteRules.isIPv6Literal(lower) else {
                error(name, "not_registrable_domain", "\(host) is not a registrable domain (a public suffix, an IP address or a single label)")
                return
            }
            result.site = registrable
            if registrable != lower {
                warning(name, "subdomain_ignored", "the device ignores the subdomain and sends to https://\(registrable)/.well-known/…", hint: "https://\(registrable)")
            }
            if !(url.path.isEmpty || url.path == "/") || url.query != nil || url.port != nil {
                warning(name, "path_ignored", "the device uses only the domain, on the default port, with its fixed /.well-known/ paths", hint: "https://\(registrable)")
            }
            if let served = check.servedSites {
                result.served = served.contains(registrable)
                if !served.contains(registrable) {
                    error(name, "site_not_served", "\(registrable) is not a site this endpoint serves, so no \(receives) reach it; it serves \(served.isEmpty ? "no site" : served.sorted().joined(separator: ", "))")
                }
            }
        }

        mutating func readReengagementOptIn(_ top: [String: PropertyList]) {
            let name = InfoPlistCheck.reengagementCopies
            guard let value = top[name] else { return }
            guard case .boolean(let opted) = value else {
                error(name, "wrong_type", "must be a Boolean; found \(value.typeName)")
                return
            }
            reengagementCopies = opted
            if opted, top[InfoPlistCheck.copyEndpoint] == nil {
                error(name, "copy_endpoint_missing", "re-engagement copies go to AttributionCopyEndpoint, which this plist does not set")
            }
        }

        mutating func readSKAdNetworkItems(_ value: PropertyList?) {
            let name = InfoPlistCheck.skAdNetworkItems
            guard let value else { return }
            guard case .array(let items) = value else {
                error(name, "wrong_type", "must be an Array of Dictionaries with SKAdNetworkIdentifier; found \(value.typeName)")
                return
            }
            var seen: Set<String> = []
            for (i, item) in items.enumerated() {
                let key = "\(name)[\(i)].SKAdNetworkIdentifier"
                guard case .dictionary(let entry) = item else {
                    error("\(name)[\(i)]", "wrong_type", "must be a Dictionary with SKAdNetworkIdentifier; found \(item.typeName)")
                    continue
                }
                guard case .string(let id)? = entry["SKAdNetworkIdentifier"] else {
                    error(key, entry["SKAdNetworkIdentifier"] == nil ? "missing_key" : "wrong_type", "each entry needs SKAdNetworkIdentifier, a String")
                    continue
                }
                let fixed = id.trimmingCharacters(in: .whitespaces).lowercased()
                if id != fixed || !fixed.hasSuffix(".skadnetwork") || fixed.count <= ".skadnetwork".count {
                    error(key, "invalid_skadnetwork_id", "\"\(id.prefix(60))\" is not a lower-case *.skadnetwork id; the device matches ids exactly",
                          hint: fixed.hasSuffix(".skadnetwork") && fixed != id ? fixed : nil)
                }
                if !seen.insert(fixed).inserted {
                    warning(key, "duplicate", "\(id) is listed more than once")
                }
                skAdNetworkIDs.append(id)
            }
        }

        func windows() -> [EffectiveWindows] {
            func setting(_ own: Int?, _ global: Int?, _ systemDefault: Int) -> EffectiveSetting {
                if let own { return EffectiveSetting(own, from: .adNetwork) }
                if let global { return EffectiveSetting(global, from: .global) }
                return EffectiveSetting(systemDefault, from: .systemDefault)
            }
            var result = [EffectiveWindows(scope: "global", click: setting(nil, global.click, 30), view: setting(nil, global.view, 1),
                                           ignoreInteractionType: nil)]
            for (network, own) in networks.sorted(by: { $0.key < $1.key }) {
                result.append(EffectiveWindows(scope: network, click: setting(own.click, global.click, 30),
                                               view: setting(own.view, global.view, 1), ignoreInteractionType: own.ignore))
            }
            return result
        }

        func cooldowns() -> EffectiveCooldowns {
            func setting(_ hours: Int?) -> EffectiveSetting {
                hours.map { EffectiveSetting($0, from: .global) } ?? EffectiveSetting(nil, from: .systemDefault)
            }
            return EffectiveCooldowns(install: setting(cooldown.install), reengagement: setting(cooldown.reengagement))
        }
    }
}

/// One of the endpoint keys: what it names and whether this endpoint serves that site.
public struct EndpointCheck: Sendable, Equatable, Codable {
    public var key: String
    public var url: String?
    /// The registrable domain the device sends to.
    public var site: String?
    /// Whether this endpoint serves `site`; nil when the served sites were not given.
    public var served: Bool?
    public var receives: String

    init(key: String, receives: String) {
        self.key = key
        self.receives = receives
    }
}
