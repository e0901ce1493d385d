import Primitives

/// A Private Click Measurement (Web AdAttributionKit) attribution report, as a browser POSTs it
/// to `/.well-known/private-click-measurement/report-attribution/`. Field names are the wire's.
public struct PCMReport: Sendable, Equatable {
    /// Always "click": WebKit measures clicks only.
    public var sourceEngagementType: String
    /// Registrable domain of the click source (or of an app's report endpoint, app-to-web).
    public var sourceSite: String
    /// 8-bit campaign id chosen by the publisher; only 256 exist, so they are reused over time.
    public var sourceID: UInt8
    /// Registrable domain of the destination where the conversion happened.
    public var attributedOnSite: String
    /// 4-bit conversion value chosen by the advertiser.
    public var triggerData: UInt8
    /// 1, 2 or 3.
    public var version: Int
    public var sourceSecretToken: String?
    public var sourceSecretTokenSignature: String?
    public var destinationSecretToken: String?
    public var destinationSecretTokenSignature: String?
    /// Fields this endpoint does not know, kept in the order received.
    public var extraFields: [JSONMember]
    /// True when the body used the pre-release dash-named keys and was normalized.
    public var usedDashKeys: Bool

    public init(
        sourceEngagementType: String = "click", sourceSite: String, sourceID: UInt8, attributedOnSite: String,
        triggerData: UInt8, version: Int = 3, sourceSecretToken: String? = nil, sourceSecretTokenSignature: String? = nil,
        destinationSecretToken: String? = nil, destinationSecretTokenSignature: String? = nil,
        extraFields: [JSONMember] = [], usedDashKeys: Bool = false
    ) {
        self.sourceEngagementType = sourceEngagementType
        self.sourceSite = sourceSite
        self.sourceID = sourceID
        self.attributedOnSite = attributedOnSite
        self.triggerData = triggerData
        self.version = version
        self.sourceSecretToken = sourceSecretToken
        self.sourceSecretTokenSignature = sourceSecretTokenSignature
        self.destinationSecretToken = destinationSecretToken
        self.destinationSecretTokenSignature = destinationSecretTokenSignature
        self.extraFields = extraFields
        self.usedDashKeys = usedDashKeys
    }
}
