import Primitives

/// Reading an advertiser from the admin API's JSON (and the config file's `advertisers`), naming
/// the field whenever one is wrong.
public enum AdvertiserInput {
    /// `{"id": "acme", "name": "Acme Shoes", "sites": ["shop.example", "app.example"]}`
    public static func advertiser(from json: JSONValue) throws(RequestProblem) -> Advertiser {
        guard case .object(let members) = json else {
            throw RequestProblem(.malformed, rule: "not_an_object", field: nil, detail: "the body must be a JSON object")
        }
        let known: Set<String> = ["id", "name", "sites"]
        var values: [String: JSONValue] = [:]
        for member in members {
            guard known.contains(member.key) else {
                throw .invalid(member.key, "unknown_field", "is not a field of an advertiser; known: id, name, sites")
            }
            values[member.key] = member.value
        }
        func string(_ key: String) throws(RequestProblem) -> String {
            guard let value = values[key] else { throw .invalid(key, "missing_field", "is required") }
            guard case .string(let s) = value else { throw .invalid(key, "wrong_type", "must be a string") }
            return s
        }
        guard let list = values["sites"] else { throw .invalid("sites", "missing_field", "is required: the registrable domains this advertiser owns") }
        guard case .array(let items) = list else { throw .invalid("sites", "wrong_type", "must be an array of registrable domains") }
        guard items.count <= AdvertiserRegistry.maxSites else {
            throw .invalid("sites", "out_of_range", "must name 1 to \(AdvertiserRegistry.maxSites) sites")
        }
        var sites: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else { throw .invalid("sites[\(i)]", "wrong_type", "must be a string") }
            sites.append(s)
        }
        return Advertiser(id: try string("id"), name: try string("name"), sites: sites)
    }
}
