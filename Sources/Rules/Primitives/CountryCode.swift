/// A country as the protocols send it: AdAttributionKit's and SKAdNetwork's `country-code`
/// (only at the highest crowd-anonymity tier) and Apple Ads' `countryOrRegion`, both ISO 3166-1
/// alpha-2. What a breakdown by country is keyed by: the code, or one of two words, so that a
/// stranger's unsigned field cannot make a key of its own.
public enum CountryCode {
    /// The field was absent: below the tier that carries it. Never guessed.
    public static let notSent = "not sent"
    /// The field was there but is no two-letter code.
    public static let unreadable = "unreadable"

    public static func key(_ text: String?) -> String {
        guard let text else { return notSent }
        let bytes = Array(text.utf8)
        guard bytes.count == 2 else { return unreadable }
        // Upper-case, as ISO writes it; a lower-case code is the same country.
        let upper = bytes.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }
        guard upper.allSatisfy({ (0x41...0x5A).contains($0) }) else { return unreadable }
        return String(decoding: upper, as: UTF8.self)
    }
}
