/// An app whose postback copies this endpoint receives: its App Store id (SKAdNetwork's
/// `app-id`, AdAttributionKit's `advertised-item-identifier`), the site its Info.plist names as
/// the endpoint, and what its conversion values mean.
public struct App: Sendable, Equatable, Codable {
    public var appID: Int
    /// The registrable domain of `NSAdvertisingAttributionReportEndpoint` / `AttributionCopyEndpoint`.
    public var site: String
    public var name: String
    public var schema: ConversionValueSchema

    public init(appID: Int, site: String, name: String, schema: ConversionValueSchema) {
        self.appID = appID
        self.site = site
        self.name = name
        self.schema = schema
    }

    enum CodingKeys: String, CodingKey {
        case appID = "app_id", site, name, schema
    }
}
