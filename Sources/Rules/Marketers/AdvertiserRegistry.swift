import Primitives

/// The advertisers and the sites each owns. A value type with every rule and no I/O, like the
/// site owners' and app developers' registries.
public struct AdvertiserRegistry: Sendable, Equatable, Codable {
    public private(set) var advertisers: [Advertiser] = []

    public init() {}

    public static let maxSites = 100

    public mutating func add(_ advertiser: Advertiser, siteRules: SiteRules) throws(RequestProblem) {
        try Self.checkID(advertiser.id)
        try RegisteredName.check(advertiser.name, field: "name")
        guard (1...Self.maxSites).contains(advertiser.sites.count) else {
            throw .invalid("sites", "out_of_range", "must name 1 to \(Self.maxSites) sites")
        }
        for (i, site) in advertiser.sites.enumerated() {
            if let violation = siteRules.check(site) { throw .invalid("sites[\(i)]", "not_registrable_domain", violation.detail) }
            if advertiser.sites[..<i].contains(site) { throw .invalid("sites[\(i)]", "duplicate_site", "names \(site) twice") }
            if let owner = owner(of: site), owner.id != advertiser.id {
                throw RequestProblem(.conflict, rule: "site_owned", field: "sites[\(i)]",
                                     detail: "sites[\(i)] \(site) belongs to advertiser \(owner.id); a site has one advertiser, so that neither sees the other's numbers")
            }
        }
        guard !advertisers.contains(where: { $0.id == advertiser.id }) else {
            throw RequestProblem(.conflict, rule: "duplicate_advertiser", field: "id", detail: "advertiser \(advertiser.id) is already registered")
        }
        advertisers.append(advertiser)
    }

    @discardableResult
    public mutating func remove(id: String) -> Bool {
        advertisers.removeEvery { $0.id == id }
    }

    public func advertiser(id: String) -> Advertiser? { advertisers.first { $0.id == id } }

    public func owner(of site: String) -> Advertiser? { advertisers.first { $0.sites.contains(site) } }

    /// 1 to 64 of `a`–`z`, `0`–`9` and `-`, not starting with `-`.
    public static func checkID(_ id: String, field: String = "id") throws(RequestProblem) {
        guard (1...64).contains(id.utf8.count), id.utf8.first != UInt8(ascii: "-"),
              id.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }) else {
            throw .invalid(field, "invalid_id", "must be 1–64 of a–z, 0–9 and -, such as \"acme\" or \"acme-eu\"")
        }
    }
}
