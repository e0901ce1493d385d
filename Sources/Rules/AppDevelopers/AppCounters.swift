import Primitives

/// What an app tells the conversion-value API about one install, from its own storage: never an
/// identifier. Read from the request's JSON; anything else the app (or its SDK) sends, such as
/// `idfa` or `idfv`, is ignored and never kept.
public struct AppCounters: Sendable, Equatable {
    public enum Framework: String, Sendable {
        case skadnetwork, adattributionkit
    }

    public var appID: Int
    /// When the app first launched (the conversion windows count from it).
    public var firstLaunch: Timestamp
    public var framework: Framework
    /// SKAdNetwork's version (`4.0`, `3.0`, …); nil for AdAttributionKit.
    public var skAdNetworkVersion: SKAdNetworkAPIVersion?
    /// The fine value the app has set in the current window, if any.
    public var conversionValue: Int?
    public var coarseConversionValue: String?
    /// How many times each in-app event happened since install.
    public var events: [String: Int]
    /// Revenue since install, by ISO 4217 currency.
    public var revenue: [String: Double]

    public init(appID: Int, firstLaunch: Timestamp, framework: Framework = .skadnetwork, skAdNetworkVersion: SKAdNetworkAPIVersion? = .four,
                conversionValue: Int? = nil, coarseConversionValue: String? = nil, events: [String: Int] = [:], revenue: [String: Double] = [:]) {
        self.appID = appID
        self.firstLaunch = firstLaunch
        self.framework = framework
        self.skAdNetworkVersion = framework == .skadnetwork ? skAdNetworkVersion : nil
        self.conversionValue = conversionValue
        self.coarseConversionValue = coarseConversionValue
        self.events = events
        self.revenue = revenue
    }

    /// `{"app_id": 6443210987, "first_launch": "2026-11-20T09:00:00Z" (or Unix seconds),
    ///   "framework": "skadnetwork" | "adattributionkit", "skadnetwork_version": "4.0",
    ///   "conversion_value": 12, "coarse_conversion_value": "low",
    ///   "events": {"level_complete": 3} (or ["level_complete"]), "revenue": {"EUR": 4.99}}`
    public static func read(_ json: JSONValue) throws(RequestProblem) -> AppCounters {
        guard case .object(let members) = json else {
            throw RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object")
        }
        var fields: [String: JSONValue] = [:]
        for member in members { fields[member.key] = member.value }

        guard let id = fields["app_id"] else { throw .invalid("app_id", "missing_field", "is required: the app's App Store id") }
        guard case .number(let idText) = id, JSONValue.isIntegerLiteral(idText) else {
            throw .invalid("app_id", "wrong_type", "must be the app's App Store id, a positive integer; got \(id.typeName)")
        }
        guard let appID = JSONValue.integerValue(idText), appID > 0 else {
            throw .invalid("app_id", "out_of_range", "must be the app's App Store id, a positive integer that fits in 64 bits; got \(idText.prefix(24))")
        }
        guard let launch = fields["first_launch"] else {
            throw .invalid("first_launch", "missing_field", "is required: when the app first launched (RFC 3339 or Unix seconds)")
        }
        let firstLaunch: Timestamp
        switch launch {
        case .string(let text):
            guard let t = Timestamp(rfc3339: text) else { throw .invalid("first_launch", "invalid_time", "must be an RFC 3339 time such as 2026-11-20T09:00:00Z") }
            firstLaunch = t
        case .number(let text):
            guard let seconds = Double(text), seconds.isFinite, seconds >= 1 else {
                throw .invalid("first_launch", "invalid_time", "must be Unix seconds after 1970; got \(text.prefix(24))")
            }
            // Past year 5000 is no device clock; it would only overflow the arithmetic below.
            guard seconds < 1e11 else {
                throw .invalid("first_launch", "time_in_the_future", "is thousands of years from now; send when the app first launched")
            }
            firstLaunch = Timestamp(millisecondsSinceEpoch: Int64(seconds * 1000))
        default: throw .invalid("first_launch", "wrong_type", "must be an RFC 3339 string or Unix seconds; got \(launch.typeName)")
        }

        var framework = Framework.skadnetwork
        if let value = fields["framework"] {
            guard case .string(let text) = value, let f = Framework(rawValue: text) else {
                throw .invalid("framework", "unknown_framework", "must be skadnetwork or adattributionkit")
            }
            framework = f
        }
        var version: SKAdNetworkAPIVersion? = .four
        if let value = fields["skadnetwork_version"] {
            guard case .string(let text) = value, let v = SKAdNetworkAPIVersion(text) else {
                throw .invalid("skadnetwork_version", "unknown_version", "must be an SKAdNetwork version such as \"4.0\" or \"3.0\"")
            }
            version = v
        }

        var conversionValue: Int?
        if let value = fields["conversion_value"], value != .null {
            guard case .number(let text) = value, JSONValue.isIntegerLiteral(text) else {
                throw .invalid("conversion_value", "wrong_type", "must be an integer 0–63; got \(value.typeName)")
            }
            guard let n = JSONValue.integerValue(text) else {
                throw .invalid("conversion_value", "out_of_range", "must be 0–63 (6 bits); got \(text.prefix(24))")
            }
            guard (0...63).contains(n) else { throw .invalid("conversion_value", "out_of_range", "must be 0–63 (6 bits); got \(n)") }
            conversionValue = n
        }
        var coarse: String?
        if let value = fields["coarse_conversion_value"], value != .null {
            guard case .string(let text) = value, ["low", "medium", "high"].contains(text) else {
                throw .invalid("coarse_conversion_value", "invalid_coarse_value", "must be low, medium or high")
            }
            coarse = text
        }

        var events: [String: Int] = [:]
        switch fields["events"] {
        case nil, .null?: break
        case .array(let names)?:
            for (i, name) in names.enumerated() {
                guard case .string(let text) = name, !text.isEmpty else { throw .invalid("events[\(i)]", "wrong_type", "must be an event name") }
                events[text, default: 0] += 1
            }
        case .object(let counts)?:
            for member in counts {
                guard case .number(let text) = member.value, JSONValue.isIntegerLiteral(text) else {
                    throw .invalid("events.\(member.key.prefix(40))", "wrong_type", "must be how many times the event happened, an integer; got \(member.value.typeName)")
                }
                guard let n = JSONValue.integerValue(text), n >= 0 else {
                    throw .invalid("events.\(member.key.prefix(40))", "out_of_range", "must be from 0 to 2^63 − 1; got \(text.prefix(24))")
                }
                events[member.key] = n
            }
        case let other?: throw .invalid("events", "wrong_type", "must be an object of event counts or an array of event names; got \(other.typeName)")
        }

        var revenue: [String: Double] = [:]
        switch fields["revenue"] {
        case nil, .null?: break
        case .object(let amounts)?:
            for member in amounts {
                guard member.key.utf8.count == 3, member.key.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else {
                    throw .invalid("revenue.\(member.key.prefix(10))", "invalid_currency", "keys are ISO 4217 codes such as USD")
                }
                guard case .number(let text) = member.value, let amount = Double(text) else {
                    throw .invalid("revenue.\(member.key)", "wrong_type", "must be the revenue since install, a number; got \(member.value.typeName)")
                }
                guard amount.isFinite, amount.sign == .plus, amount <= ConversionValueSchema.maxRevenue else {
                    throw .invalid("revenue.\(member.key)", "out_of_range", "must be the revenue since install, from 0 to 1e12; got \(text.prefix(24))")
                }
                revenue[member.key] = amount
            }
        case let other?: throw .invalid("revenue", "wrong_type", "must be an object of amounts by currency, e.g. {\"USD\": 4.99}; got \(other.typeName)")
        }

        return AppCounters(appID: appID, firstLaunch: firstLaunch, framework: framework, skAdNetworkVersion: version,
                           conversionValue: conversionValue, coarseConversionValue: coarse, events: events, revenue: revenue)
    }
}

/// The SKAdNetwork API the app calls: before 4.0 one window and a value that only rises
/// (`updateConversionValue`); from 4.0 three windows, coarse values and locks
/// (`updatePostbackConversionValue`).
public struct SKAdNetworkAPIVersion: Sendable, Equatable, Comparable {
    public let major: Int
    public let minor: Int

    public static let four = SKAdNetworkAPIVersion(major: 4, minor: 0)

    init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `4.0`, `3`, `2.2`: one digit each, as Apple writes them; `04.0`, `4.-0` and `+4` are not versions.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        func digit(_ part: Substring) -> Int? {
            guard part.utf8.count == 1, let c = part.utf8.first, c >= 48, c <= 57 else { return nil }
            return Int(c - 48)
        }
        guard (1...2).contains(parts.count), let major = digit(parts[0]), major >= 1 else { return nil }
        let minor = parts.count == 2 ? digit(parts[1]) : 0
        guard let minor else { return nil }
        self.init(major: major, minor: minor)
    }

    public static func < (a: Self, b: Self) -> Bool { (a.major, a.minor) < (b.major, b.minor) }

    /// Conversion windows, coarse values and locks.
    public var hasWindows: Bool { major >= 4 }
}
