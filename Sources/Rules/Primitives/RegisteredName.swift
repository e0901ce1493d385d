/// A name a registration gives something (a campaign, an app, an advertiser, a token's label):
/// what the page and the exports show, so 1 to 100 bytes and no control characters.
public enum RegisteredName {
    public static func check(_ name: String, field: String, rule: String = "invalid_name") throws(RequestProblem) {
        guard !name.isEmpty, name.utf8.count <= 100 else { throw .invalid(field, rule, "must be 1–100 bytes") }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalid(field, rule, "must not contain control characters")
        }
    }
}

extension Array {
    /// Removes every element that matches; whether any did (a DELETE's 204 or 404).
    @discardableResult
    public mutating func removeEvery(where matches: (Element) -> Bool) -> Bool {
        let before = count
        removeAll(where: matches)
        return count != before
    }
}
