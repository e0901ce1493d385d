import Primitives

/// Reading app developers' registrations from the admin API's JSON, naming the field whenever
/// one is wrong.
public enum AppRegistryInput {
    /// `{"app_id": 525463029, "site": "app.example", "name": "Example Game",
    ///   "schema": {"fine": [{"from": 0, "to": 9, "meaning": "tutorial", "events": ["tutorial"]},
    ///                       {"from": 10, "to": 63, "meaning": "purchase",
    ///                        "revenue": {"min": 0.99, "max": 49.99, "currency": "USD"}}],
    ///              "coarse": {"low": "installed", "medium": "engaged", "high": "paid"},
    ///              "coarse_from_fine": {"medium": 10, "high": 30}, "lock_at": {"fine": 63, "coarse": "high"}}}`
    public static func app(from json: JSONValue) throws(RequestProblem) -> App {
        let o = try Object(json, "", known: ["app_id", "site", "name", "schema"])
        let schema = try Object(o.value("schema") ?? .object([]), "schema.", known: ["fine", "coarse", "coarse_from_fine", "lock_at"])
        var fine: [ConversionValueSchema.FineRange] = []
        for (i, item) in try schema.array("fine").enumerated() {
            let r = try Object(item, "schema.fine[\(i)].", known: ["from", "to", "meaning", "events", "revenue"])
            var revenue: ConversionValueSchema.Revenue?
            if let money = r.value("revenue") {
                let m = try Object(money, "schema.fine[\(i)].revenue.", known: ["min", "max", "currency"])
                revenue = .init(min: try m.number("min"), max: try m.number("max"), currency: try m.string("currency"))
            }
            let events = try r.value("events").map { _ throws(RequestProblem) in try r.array("events").enumerated().map {
                (n, e) throws(RequestProblem) -> String in
                guard case .string(let s) = e else { throw .invalid("schema.fine[\(i)].events[\(n)]", "wrong_type", "must be a string") }
                return s
            } }
            fine.append(.init(from: try r.integer("from"), to: try r.integer("to"), meaning: try r.string("meaning"),
                              events: events, revenue: revenue))
        }
        var coarse: [String: String] = [:]
        if let c = schema.value("coarse") {
            let words = try Object(c, "schema.coarse.", known: ["low", "medium", "high"])
            for key in ["low", "medium", "high"] where words.value(key) != nil { coarse[key] = try words.string(key) }
        }
        var thresholds: ConversionValueSchema.CoarseThresholds?
        if let t = schema.value("coarse_from_fine") {
            let levels = try Object(t, "schema.coarse_from_fine.", known: ["medium", "high"])
            thresholds = .init(medium: try levels.integer("medium"), high: try levels.integer("high"))
        }
        var lock: ConversionValueSchema.Lock?
        if let l = schema.value("lock_at") {
            let at = try Object(l, "schema.lock_at.", known: ["fine", "coarse"])
            lock = .init(fine: at.value("fine") == nil ? nil : try at.integer("fine"),
                         coarse: at.value("coarse") == nil ? nil : try at.string("coarse"))
        }
        return App(appID: try o.integer("app_id"), site: try o.string("site"), name: try o.string("name"),
                   schema: ConversionValueSchema(fine: fine, coarse: coarse, coarseFromFine: thresholds, lockAt: lock))
    }

    /// `{"id": "example123.skadnetwork", "name": "Example Ads",
    ///   "campaigns": [{"source_identifier": "5239", "name": "Winter"}, {"campaign_id": 42, "name": "Legacy"}]}`
    public static func adNetwork(from json: JSONValue) throws(RequestProblem) -> AdNetwork {
        let o = try Object(json, "", known: ["id", "name", "campaigns"])
        var campaigns: [AdNetwork.Campaign] = []
        for (i, item) in try o.array("campaigns").enumerated() {
            let c = try Object(item, "campaigns[\(i)].", known: ["source_identifier", "campaign_id", "name"])
            campaigns.append(.init(sourceIdentifier: c.value("source_identifier") == nil ? nil : try c.string("source_identifier"),
                                   campaignID: c.value("campaign_id") == nil ? nil : try c.integer("campaign_id"),
                                   name: try c.string("name")))
        }
        return AdNetwork(id: try o.string("id"), name: try o.string("name"), campaigns: campaigns)
    }

    /// `{"campaign_id": 542370539, "name": "Winter puzzles",
    ///   "ad_groups": [{"id": 542317095, "name": "Puzzle fans"}], "keywords": [{"id": 87675432, "name": "puzzle game"}]}`
    public static func appleAdsCampaign(from json: JSONValue) throws(RequestProblem) -> AppleAdsCampaign {
        let o = try Object(json, "", known: ["campaign_id", "name", "ad_groups", "keywords"])
        func named(_ key: String) throws(RequestProblem) -> [AppleAdsCampaign.Named] {
            var list: [AppleAdsCampaign.Named] = []
            for (i, item) in try o.array(key).enumerated() {
                let n = try Object(item, "\(key)[\(i)].", known: ["id", "name"])
                list.append(.init(id: Int64(try n.integer("id")), name: try n.string("name")))
            }
            return list
        }
        return AppleAdsCampaign(campaignID: Int64(try o.integer("campaign_id")), name: try o.string("name"),
                                adGroups: try named("ad_groups"), keywords: try named("keywords"))
    }

    private struct Object {
        let members: [String: JSONValue]
        let prefix: String

        init(_ json: JSONValue, _ prefix: String, known: Set<String>) throws(RequestProblem) {
            guard case .object(let list) = json else {
                if prefix.isEmpty {
                    throw RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object")
                }
                throw .invalid(String(prefix.dropLast()), "wrong_type", "must be an object; got \(json.typeName)")
            }
            var members: [String: JSONValue] = [:]
            for member in list {
                guard known.contains(member.key) else {
                    throw .invalid(prefix + member.key, "unknown_field", "is not a field here; known: \(known.sorted().joined(separator: ", "))")
                }
                members[member.key] = member.value
            }
            self.members = members
            self.prefix = prefix
        }

        func value(_ key: String) -> JSONValue? { members[key] }

        func string(_ key: String) throws(RequestProblem) -> String {
            guard let value = members[key] else { throw .invalid(prefix + key, "missing_field", "is required") }
            guard case .string(let s) = value else { throw .invalid(prefix + key, "wrong_type", "must be a string; got \(value.typeName)") }
            return s
        }

        func integer(_ key: String) throws(RequestProblem) -> Int {
            guard let value = members[key] else { throw .invalid(prefix + key, "missing_field", "is required") }
            guard case .number(let text) = value, JSONValue.isIntegerLiteral(text) else {
                throw .invalid(prefix + key, "wrong_type", "must be an integer; got \(value.typeName)")
            }
            guard let n = JSONValue.integerValue(text) else {
                throw .invalid(prefix + key, "out_of_range", "must be an integer that fits in 64 bits; got \(Self.shown(text))")
            }
            return n
        }

        func number(_ key: String) throws(RequestProblem) -> Double {
            guard let value = members[key] else { throw .invalid(prefix + key, "missing_field", "is required") }
            guard case .number(let text) = value, let n = Double(text) else {
                throw .invalid(prefix + key, "wrong_type", "must be a number; got \(value.typeName)")
            }
            guard n.isFinite else {
                throw .invalid(prefix + key, "out_of_range", "must be a number a 64-bit double can hold; got \(Self.shown(text))")
            }
            return n
        }

        /// A literal as it came, cut short if it is long.
        static func shown(_ text: String) -> String {
            text.utf8.count > 24 ? String(text.prefix(20)) + "… (\(text.utf8.count) characters)" : text
        }

        func array(_ key: String) throws(RequestProblem) -> [JSONValue] {
            guard let value = members[key] else { return [] }
            guard case .array(let items) = value else { throw .invalid(prefix + key, "wrong_type", "must be an array; got \(value.typeName)") }
            return items
        }
    }
}
