import Primitives

/// Reading registrations from the admin API's JSON, naming the field whenever one is wrong.
public enum RegistryInput {
    /// `{"site": "shop.example", "name": "purchase", "trigger_data": 5, "priority": 40}`
    public static func conversion(from json: JSONValue) throws(RequestProblem) -> Conversion {
        let object = try Fields(json, known: ["site", "name", "trigger_data", "priority"])
        return Conversion(site: try object.string("site"), name: try object.string("name"),
                          triggerData: try object.integer("trigger_data", 0...15, "4 bits"),
                          priority: try object.integer("priority", 0...63, "6 bits", default: 0))
    }

    /// `{"source_site": "news.example", "source_id": 42, "destination": "shop.example",
    ///   "name": "Winter sale", "starts_at": "2026-11-01T00:00:00Z", "ends_at": "2026-11-30T00:00:00Z"}`
    public static func campaign(from json: JSONValue) throws(RequestProblem) -> Campaign {
        let object = try Fields(json, known: ["source_site", "source_id", "destination", "name", "starts_at", "ends_at"])
        return Campaign(sourceSite: try object.string("source_site"),
                        sourceID: try object.integer("source_id", 0...255, "8 bits"),
                        destination: try object.destination(),
                        name: try object.string("name"),
                        startsAt: try object.time("starts_at"),
                        endsAt: try object.optionalTime("ends_at"))
    }

    private struct Fields {
        let members: [String: JSONValue]

        init(_ json: JSONValue, known: Set<String>) throws(RequestProblem) {
            guard case .object(let list) = json else {
                throw RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object")
            }
            var members: [String: JSONValue] = [:]
            for member in list {
                guard known.contains(member.key) else {
                    throw .invalid(member.key, "unknown_field", "is not a field of this registration; known: \(known.sorted().joined(separator: ", "))")
                }
                members[member.key] = member.value
            }
            self.members = members
        }

        func string(_ key: String) throws(RequestProblem) -> String {
            guard let value = members[key] else { throw .invalid(key, "missing_field", "is required") }
            guard case .string(let s) = value else { throw .invalid(key, "wrong_type", "must be a string; got \(value.typeName)") }
            return s
        }

        func integer(_ key: String, _ range: ClosedRange<Int>, _ what: String, default: UInt8? = nil) throws(RequestProblem) -> UInt8 {
            guard let value = members[key] else {
                if let `default` { return `default` }
                throw .invalid(key, "missing_field", "is required")
            }
            guard case .number(let text) = value, JSONValue.isIntegerLiteral(text) else {
                throw .invalid(key, "wrong_type", "must be an integer; got \(value.typeName)")
            }
            guard text.utf8.count <= 4, let n = Int(text), range.contains(n) else {
                throw .invalid(key, "out_of_range", "must be \(range.lowerBound)–\(range.upperBound) (\(what)); got \(text.prefix(20))")
            }
            return UInt8(n)
        }

        /// A registrable domain; an origin such as `https://shop.example` is taken for its host,
        /// since that is how `attributiondestination` is written on the link.
        func destination() throws(RequestProblem) -> String {
            let text = try string("destination")
            for scheme in ["https://", "http://"] where text.hasPrefix(scheme) {
                var host = text.dropFirst(scheme.count)
                if host.hasSuffix("/") { host = host.dropLast() }
                return String(host)
            }
            return text
        }

        func time(_ key: String) throws(RequestProblem) -> Timestamp {
            let text = try string(key)
            guard let t = Timestamp(rfc3339: text) else {
                throw .invalid(key, "invalid_time", "must be an RFC 3339 time such as 2026-11-20T00:00:00Z; got \"\(text.prefix(40))\"")
            }
            return t
        }

        func optionalTime(_ key: String) throws(RequestProblem) -> Timestamp? {
            if members[key] == nil || members[key] == .null { return nil }
            return try time(key)
        }
    }
}
