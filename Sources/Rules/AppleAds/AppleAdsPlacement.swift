/// Where in the App Store an Apple Ads ad ran: what Apple's attribution API answers as
/// `supplyPlacement` (since January 2026), and what Apple Ads' own SKAdNetwork and
/// AdAttributionKit postbacks carry as their campaign id or source identifier (10, 20, 30, 40).
///
/// The raw values are what summaries and digests keep; the log keeps Apple's text as it came.
public enum AppleAdsPlacement: UInt8, Sendable, CaseIterable, Comparable {
    /// No placement in the answer: records before 2026, or an answer without one.
    case unstated = 0
    case searchResults = 1
    case searchTab = 2
    case todayTab = 3
    case productPages = 4
    /// A placement this endpoint does not know yet (Apple adds them): kept as text in the log,
    /// counted here, so that a new one shows up instead of vanishing.
    case other = 5

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Apple's `supplyPlacement`, read without regard to case.
    public init(supplyPlacement: String?) {
        guard let text = supplyPlacement else { self = .unstated; return }
        switch text.uppercased() {
        case "APPSTORE_SEARCH_RESULTS": self = .searchResults
        case "APPSTORE_SEARCH_TAB": self = .searchTab
        case "APPSTORE_TODAY_TAB": self = .todayTab
        case "APPSTORE_PRODUCT_PAGES": self = .productPages
        default: self = .other
        }
    }

    /// The placement an Apple Ads postback's campaign id (before SKAdNetwork 4.0) or source
    /// identifier names; nil for any other value.
    public init?(postbackCampaign value: String) {
        switch value {
        case "10": self = .searchResults
        case "20": self = .searchTab
        case "30": self = .todayTab
        case "40": self = .productPages
        default: return nil
        }
    }

    /// The value Apple Ads' postbacks carry for it.
    public var postbackCampaign: String? {
        switch self {
        case .searchResults: "10"
        case .searchTab: "20"
        case .todayTab: "30"
        case .productPages: "40"
        case .unstated, .other: nil
        }
    }

    /// As the API and the export name it.
    public var name: String {
        switch self {
        case .unstated: "unstated"
        case .searchResults: "search_results"
        case .searchTab: "search_tab"
        case .todayTab: "today_tab"
        case .productPages: "product_pages"
        case .other: "other"
        }
    }

    /// As the page shows it.
    public var label: String {
        switch self {
        case .unstated: "Placement not stated"
        case .searchResults: "Search Results"
        case .searchTab: "Search Tab"
        case .todayTab: "Today Tab"
        case .productPages: "Product Pages"
        case .other: "Another placement"
        }
    }
}
