import Primitives

/// One version of an app's conversion-value schema: what its values meant from `effectiveFrom`
/// until the next version's. Never edited or removed once made.
public struct SchemaVersion: Sendable, Equatable, Codable {
    /// 1, 2, 3, … in the order they were made.
    public var version: Int
    /// When it took effect; nil for version 1, which also covers everything before it (a schema
    /// registered after its app's first postbacks still reads them).
    public var effectiveFrom: Timestamp?
    public var schema: ConversionValueSchema

    public init(version: Int, effectiveFrom: Timestamp?, schema: ConversionValueSchema) {
        self.version = version
        self.effectiveFrom = effectiveFrom
        self.schema = schema
    }

    enum CodingKeys: String, CodingKey {
        case version, effectiveFrom = "effective_from", schema
    }

    /// `effective_from` always written, null for version 1: a reader sees it covers the past.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(effectiveFrom, forKey: .effectiveFrom)
        try container.encode(schema, forKey: .schema)
    }
}
