/// Which protocol a stored record belongs to. The log keeps it as one byte in each record's
/// header, so that a second protocol can share the log and the export and metrics can say which
/// a record is.
public enum AttributionProtocol: UInt8, Sendable, CaseIterable {
    /// Private Click Measurement (Web AdAttributionKit): reports and triggers.
    case pcm = 1
    /// SKAdNetwork postback copies.
    case skadnetwork = 2
    /// AdAttributionKit postback copies.
    case adattributionkit = 3
    /// Apple Ads attribution tokens and Apple's answers (AdServices).
    case appleAds = 4

    /// The name the export and `/metrics` use.
    public var name: String {
        switch self {
        case .pcm: "pcm"
        case .skadnetwork: "skadnetwork"
        case .adattributionkit: "adattributionkit"
        case .appleAds: "apple_ads"
        }
    }

    /// The protocol of a record's header byte. Records written before the byte carried it have 0
    /// there, and only PCM existed then.
    public init?(logTag: UInt8) {
        if logTag == 0 { self = .pcm } else { self.init(rawValue: logTag) }
    }
}
