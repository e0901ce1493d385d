
/// An advertiser's named conversion: what a pixel hit on `site` reports to the browser.
/// "purchase" = trigger data 5 with priority 40 is the usual shape.
public struct Conversion: Sendable, Equatable, Codable {
    /// The destination site (registrable domain) the conversion happens on.
    public var site: String
    /// Unique per site.
    public var name: String
    /// 0–15: the 4 bits that reach the report.
    public var triggerData: UInt8
    /// 0–63: decides which trigger wins when several follow one click; never reaches the report.
    public var priority: UInt8

    public init(site: String, name: String, triggerData: UInt8, priority: UInt8) {
        self.site = site
        self.name = name
        self.triggerData = triggerData
        self.priority = priority
    }

    enum CodingKeys: String, CodingKey {
        case site, name
        case triggerData = "trigger_data"
        case priority
    }
}
