import Primitives

/// Reading a relay destination from the admin API's JSON (and the config file's `relays`),
/// naming the field whenever one is wrong.
public enum RelayDestinationInput {
    static let known = ["name", "url", "app_id", "site", "protocols", "copies", "development", "internal", "secret"]

    /// `{"name": "appsflyer-skan", "url": "https://copies.partner.example/skan", "app_id": 525463029,
    ///   "protocols": ["skadnetwork", "adattributionkit"], "copies": "accepted", "development": false,
    ///   "internal": false, "secret": "…"}`
    public static func destination(from json: JSONValue) throws(RequestProblem) -> RelayDestination {
        guard case .object(let members) = json else {
            throw RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object")
        }
        var values: [String: JSONValue] = [:]
        for member in members {
            guard known.contains(member.key) else {
                throw .invalid(member.key, "unknown_field", "is not a field of a relay destination; known: \(known.joined(separator: ", "))")
            }
            values[member.key] = member.value
        }
        func string(_ key: String) throws(RequestProblem) -> String? {
            guard let value = values[key] else { return nil }
            guard case .string(let s) = value else { throw .invalid(key, "wrong_type", "must be a string; got \(value.typeName)") }
            return s
        }
        func flag(_ key: String) throws(RequestProblem) -> Bool {
            guard let value = values[key] else { return false }
            guard case .bool(let b) = value else { throw .invalid(key, "wrong_type", "must be true or false; got \(value.typeName)") }
            return b
        }
        guard let name = try string("name") else { throw .invalid("name", "missing_field", "is required") }
        guard let url = try string("url") else { throw .invalid("url", "missing_field", "is required: the https:// URL copies are sent to") }
        var appID: Int?
        if let value = values["app_id"] {
            guard case .number(let text) = value, JSONValue.isIntegerLiteral(text), let n = JSONValue.integerValue(text), n > 0 else {
                throw .invalid("app_id", "wrong_type", "must be an app's numeric id, as registered")
            }
            appID = n
        }
        guard let list = values["protocols"] else {
            throw .invalid("protocols", "missing_field", "is required: any of skadnetwork, adattributionkit, pcm")
        }
        guard case .array(let items) = list, items.count <= RelayProtocol.allCases.count * 2 else {
            throw .invalid("protocols", "wrong_type", "must be an array of skadnetwork, adattributionkit, pcm")
        }
        var protocols: [RelayProtocol] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item, let p = RelayProtocol(rawValue: s) else {
                throw .invalid("protocols[\(i)]", "unknown_protocol", "must be skadnetwork, adattributionkit or pcm")
            }
            protocols.append(p)
        }
        var copies = RelayDestination.Copies.accepted
        if let text = try string("copies") {
            guard let c = RelayDestination.Copies(rawValue: text) else {
                throw .invalid("copies", "invalid_value", "must be \"accepted\" (the default) or \"all\" (quarantined copies too)")
            }
            copies = c
        }
        return RelayDestination(name: name, url: url, appID: appID, site: try string("site"), protocols: protocols, copies: copies,
                                development: try flag("development"), internal: try flag("internal"), secret: try string("secret"))
    }
}
