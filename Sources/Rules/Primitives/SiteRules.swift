/// What may stand in a report's `source_site` or `attributed_on_site`: a lowercase registrable
/// domain (eTLD+1) in ASCII, as WebKit writes it. `localhost` and IP literals are what WebKit's
/// own tests and Safari's Debug Mode use; they are accepted only in development mode.
public struct SiteRules: Sendable {
    public let publicSuffixList: PublicSuffixList
    public let developmentMode: Bool

    public init(publicSuffixList: PublicSuffixList = .shipped, developmentMode: Bool = false) {
        self.publicSuffixList = publicSuffixList
        self.developmentMode = developmentMode
    }

    /// Why a value is not a site, in words a site owner can act on.
    public enum Violation: Error, Sendable, Equatable {
        case empty
        case notASCII(suggestion: String?)
        case notLowercase(suggestion: String)
        case invalidHostname(String)
        case publicSuffix
        case subdomain(registrable: String)
        case developmentOnly(String)

        public var detail: String {
            switch self {
            case .empty: "must not be empty"
            case .notASCII(let suggestion):
                "must be an ASCII domain; internationalized names are sent in their xn-- form"
                    + (suggestion.map { " (\($0))" } ?? "")
            case .notLowercase(let suggestion): "must be lowercase (\(suggestion))"
            case .invalidHostname(let why): "is not a valid host name: \(why)"
            case .publicSuffix: "is a public suffix, not a registrable domain"
            case .subdomain(let registrable): "must be a registrable domain, not a subdomain: the site is \(registrable)"
            case .developmentOnly(let what): "\(what) is accepted only in development mode (--dev)"
            }
        }
    }

    public func check(_ site: String) -> Violation? {
        if site.isEmpty { return .empty }
        if !site.utf8.allSatisfy({ $0 < 0x80 }) {
            return .notASCII(suggestion: Punycode.toASCII(domain: site.lowercased()))
        }
        if site.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            return .notLowercase(suggestion: site.lowercased())
        }
        if site == "localhost" {
            return developmentMode ? nil : .developmentOnly("localhost")
        }
        if Self.isIPv4Literal(site) || Self.isIPv6Literal(site) {
            return developmentMode ? nil : .developmentOnly("an IP address")
        }
        if let why = Self.hostnameViolation(site) { return .invalidHostname(why) }
        guard let registrable = publicSuffixList.registrableDomain(of: site) else { return .publicSuffix }
        if registrable.startIndex != site.startIndex { return .subdomain(registrable: String(registrable)) }
        return nil
    }

    /// LDH labels of 1–63 characters, no leading or trailing hyphen, at most 253 in all.
    static func hostnameViolation(_ name: String) -> String? {
        if name.utf8.count > 253 { return "longer than 253 characters" }
        if name.hasSuffix(".") { return "ends with a dot" }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count < 2 { return "has a single label" }
        for label in labels {
            if label.isEmpty { return "has an empty label" }
            if label.utf8.count > 63 { return "has a label longer than 63 characters" }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "has a label that starts or ends with '-'" }
            for c in label.utf8 {
                let ok = (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
                    || c == UInt8(ascii: "-")
                if !ok { return "contains '\(Character(Unicode.Scalar(c)))'" }
            }
        }
        if labels.last!.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return "ends with a numeric label"
        }
        return nil
    }

    public static func isIPv4Literal(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        return parts.allSatisfy { part in
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = Int(part) else { return false }
            return value <= 255 && (part.count == 1 || part.first != "0")
        }
    }

    /// Bracketed or bare IPv6 text, checked loosely: hex groups and colons, at most one `::`.
    public static func isIPv6Literal(_ s: String) -> Bool {
        var body = Substring(s)
        if body.hasPrefix("[") && body.hasSuffix("]") { body = body.dropFirst().dropLast() }
        guard body.contains(":"), body.count <= 45 else { return false }
        if body.ranges(of: "::").count > 1 { return false }
        return body.split(separator: ":", omittingEmptySubsequences: true).allSatisfy { group in
            group.count <= 4 && group.allSatisfy(\.isHexDigit) || SiteRules.isIPv4Literal(String(group))
        }
    }
}

/// Checks a site (`SiteRules` does, purely; the endpoint adds a memo in front of it).
public protocol SiteChecking: Sendable {
    func check(_ site: String) -> SiteRules.Violation?
}

extension SiteRules: SiteChecking {}
