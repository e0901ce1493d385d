/// Whose numbers a marketer reads: a brand, or an agency's client. It owns sites, and with them
/// everything delivered to them: the PCM reports sent to those sites, the postback copies and
/// Apple Ads tokens the apps registered at those sites send there. A site belongs to one
/// advertiser at most, so that a viewer token scoped to one never counts another's.
public struct Advertiser: Sendable, Equatable, Codable {
    /// Lowercase letters, digits and `-`: it stands in URLs (`?advertiser=`) and in viewer tokens.
    public var id: String
    public var name: String
    /// Registrable domains this endpoint serves.
    public var sites: [String]

    public init(id: String, name: String, sites: [String]) {
        self.id = id
        self.name = name
        self.sites = sites
    }
}
