/// A value the device will use, and the level of the precedence it comes from: ad network >
/// global > system default.
public struct EffectiveSetting: Sendable, Equatable, Codable {
    public enum Source: String, Sendable, Codable {
        case adNetwork = "ad_network"
        case global
        case systemDefault = "system_default"
    }

    /// Days for windows, hours for cooldowns; nil when the system's default is "none".
    public var value: Int?
    public var source: Source

    public init(_ value: Int?, from source: Source) {
        self.value = value
        self.source = source
    }
}

/// The attribution windows for installs as one ad network sees them (or every network without
/// its own entry, for `global`).
public struct EffectiveWindows: Sendable, Equatable, Codable {
    /// `global`, or the ad network's id as it stands in `AttributionWindows`.
    public var scope: String
    /// Days a click impression stays eligible: 1–30, 30 by default.
    public var click: EffectiveSetting
    /// Days a view impression stays eligible: 1–7, 1 by default.
    public var view: EffectiveSetting
    /// `click` or `view`: impressions of this kind from this ad network are ignored.
    public var ignoreInteractionType: String?

    public init(scope: String, click: EffectiveSetting, view: EffectiveSetting, ignoreInteractionType: String?) {
        self.scope = scope
        self.click = click
        self.view = view
        self.ignoreInteractionType = ignoreInteractionType
    }

    enum CodingKeys: String, CodingKey {
        case scope, click, view, ignoreInteractionType = "ignore_interaction_type"
    }
}

/// The cooldowns after a conversion, in hours (0–720), during which no new conversion is made.
public struct EffectiveCooldowns: Sendable, Equatable, Codable {
    public var install: EffectiveSetting
    public var reengagement: EffectiveSetting

    enum CodingKeys: String, CodingKey {
        case install, reengagement = "re_engagement"
    }
}
