import Primitives

/// The well-known trigger URL, read exactly as WebKit writes and accepts it (PROTOCOLS.md §1.1):
/// `/.well-known/private-click-measurement/trigger-attribution/DD[/PP]`, two digits each, trigger
/// data 00–15 and priority 00–63, no trailing slash, and only `attributionSource` and
/// `attributionDestinationNonce` in the query.
public struct TriggerPath: Sendable, Equatable {
    public static let prefix = "/.well-known/private-click-measurement/trigger-attribution/"

    public var triggerData: UInt8
    public var priority: UInt8
    /// The registrable source site of `attributionSource`, if given.
    public var attributionSource: String?

    public static func parse(path: Substring, queryItems: [(name: String, value: String)], siteRules: SiteRules)
        throws(RequestProblem) -> TriggerPath {
        guard path.hasPrefix(prefix) else { throw problem(nil, "not_a_trigger_path", "the path must start with \(prefix)") }
        let segments = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 1 || segments.count == 2 else {
            throw problem(nil, "invalid_trigger_path", "the path must end with /DD or /DD/PP (no trailing slash, no extra segments)")
        }
        let triggerData = try twoDigits(segments[0], max: 15, field: "trigger_data")
        let priority = segments.count == 2 ? try twoDigits(segments[1], max: 63, field: "priority") : 0
        var source: String?
        var seen: Set<String> = []
        for (name, value) in queryItems {
            guard seen.insert(name).inserted else { throw problem(name, "repeated_query_parameter", "\(name) appears more than once") }
            switch name {
            case "attributionSource":
                source = try sourceSite(value, siteRules: siteRules)
            case "attributionDestinationNonce":
                guard value.utf8.count == 22, Base64URL.isValidUnpadded(value) else {
                    throw problem(name, "invalid_nonce", "attributionDestinationNonce must be 16 bytes in base64url without padding (22 characters)")
                }
            default:
                throw problem(name, "unknown_query_parameter", "\(name) is not allowed; WebKit accepts only attributionSource and attributionDestinationNonce")
            }
        }
        return TriggerPath(triggerData: triggerData, priority: priority, attributionSource: source)
    }

    /// `DD` or `PP`: exactly two ASCII digits, at most `max`.
    private static func twoDigits(_ segment: Substring, max: UInt8, field: String) throws(RequestProblem) -> UInt8 {
        let b = Array(segment.utf8)
        guard b.count == 2, b.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw problem(field, "invalid_trigger_path", "\(field) must be exactly two digits (e.g. 05); got \"\(segment.prefix(20))\"")
        }
        let value = (b[0] - 48) * 10 + (b[1] - 48)
        guard value <= max else { throw problem(field, "out_of_range", "\(field) must be 00–\(max); got \(segment)") }
        return value
    }

    /// `https://news.example`: a bare https origin of a registrable domain.
    public static func sourceSite(_ origin: String, field: String = "attributionSource", siteRules: SiteRules) throws(RequestProblem) -> String {
        guard origin.hasPrefix("https://") else {
            throw problem(field, "invalid_source", "\(field) must be an https origin such as https://news.example; got \"\(origin.prefix(60))\"")
        }
        let host = String(origin.dropFirst("https://".count))
        guard !host.contains(where: { "/?#@:".contains($0) }) else {
            throw problem(field, "invalid_source", "\(field) must be a bare origin, without path, query, fragment, user or port; got \"\(origin.prefix(60))\"")
        }
        if let violation = siteRules.check(host) { throw problem(field, "invalid_source", "\(field): \(host) \(violation.detail)") }
        return host
    }

    static func problem(_ field: String?, _ rule: String, _ detail: String) -> RequestProblem {
        RequestProblem(.malformed, rule: rule, field: field, detail: detail)
    }

    /// `/.well-known/…/trigger-attribution/05/40`
    public static func path(triggerData: UInt8, priority: UInt8) -> String {
        func two(_ v: UInt8) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return prefix + two(triggerData) + "/" + two(priority)
    }
}
