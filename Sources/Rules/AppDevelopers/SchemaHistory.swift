import Primitives

/// Every version an app's schema has had, oldest first. A change makes a new version effective
/// from that moment; nothing is ever edited or removed, not even when the app is: its postbacks
/// are still read with the versions they were set under.
public struct SchemaHistory: Sendable, Equatable, Codable {
    public var appID: Int
    /// The site the app was registered at: whose its versions are (`NameDisclosure`). An app
    /// never moves to another site while it has versions.
    public var site: String?
    public private(set) var versions: [SchemaVersion]

    /// Versions one app may have: far more than any schema changes in a year, and a bound on
    /// what an admin's script gone wrong can make the registry hold.
    public static let maxVersions = 1000

    /// A new history, its first version the app's schema, covering everything before it too.
    public init(appID: Int, site: String?, schema: ConversionValueSchema) {
        self.appID = appID
        self.site = site
        versions = [SchemaVersion(version: 1, effectiveFrom: nil, schema: schema)]
    }

    enum CodingKeys: String, CodingKey {
        case appID = "app_id", site, versions
    }

    public var current: SchemaVersion? { versions.last }

    public func version(_ number: Int) -> SchemaVersion? {
        versions.indices.contains(number - 1) && versions[number - 1].version == number ? versions[number - 1] : versions.first { $0.version == number }
    }

    /// Makes `schema` the current version from `now`, unless it already is. Returns the version
    /// made, or nil when nothing changed.
    @discardableResult
    public mutating func record(_ schema: ConversionValueSchema, at now: Timestamp) throws(RequestProblem) -> SchemaVersion? {
        guard let last = versions.last else {
            versions = [SchemaVersion(version: 1, effectiveFrom: nil, schema: schema)]
            return versions[0]
        }
        guard last.schema != schema else { return nil }
        guard versions.count < Self.maxVersions else {
            throw RequestProblem(.conflict, rule: "too_many_schema_versions", field: "schema",
                                 detail: "app \(appID)'s schema has changed \(Self.maxVersions - 1) times, as many as one app may; register it under a new app, or ask why a script changes it so often")
        }
        // Two changes in one millisecond still take effect in the order they were made.
        let after = last.effectiveFrom.map { $0.adding(milliseconds: 1) } ?? now
        let version = SchemaVersion(version: last.version + 1, effectiveFrom: max(now, after), schema: schema)
        versions.append(version)
        return version
    }

    /// The version in force at `time`: the last to take effect at or before it.
    func inForce(at time: Timestamp) -> Int {
        var found = versions.first?.version ?? 0
        for v in versions.dropFirst() {
            guard let from = v.effectiveFrom, from <= time else { break }
            found = v.version
        }
        return found
    }

    /// Which version a value set within `window` was set under: one, or several when the
    /// schema changed inside the window.
    public func reading(_ window: ValueSetWindow) -> SchemaReading {
        guard !versions.isEmpty else { return .beforeAnyVersion }
        let first = inForce(at: window.earliest), last = inForce(at: window.latest)
        return first == last ? .version(first) : .ambiguous(first, last)
    }

    /// A reading made before there was a version is version 1's, once there is one.
    public func resolve(_ reading: SchemaReading) -> SchemaReading {
        if case .beforeAnyVersion = reading, let first = versions.first { return .version(first.version) }
        return reading
    }
}
