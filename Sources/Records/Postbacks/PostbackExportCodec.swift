import AdAttributionKit
import Primitives
import RecordLog

/// A stored postback as the exports show it:
///
/// `{"id":3,"received_at":"…","protocol":"skadnetwork","site":"app.example","verdict":"accepted",
///   "reasons":[],"signature":"apple","duplicates_received":2,"schema_version":2,"schema_ambiguous_versions":"",
///   "unsigned_fields":["conversion-value"],"version":"4.0","ad-network-id":"…",…}`
///
/// `schema_version` is the version of the app's conversion-value schema its value reads with
/// (null without a value, a registered app or one version); `schema_ambiguous_versions` names
/// the versions it could have been set under when the schema changed in its window ("1-2").
///
/// The postback's members keep their wire names (dashes), so they never collide with the
/// endpoint's own snake_case keys; a member that would is under `extra`. The CSV row has the
/// same facts, one column per field either protocol has. How many copies came again is the
/// ledger's, as of the export.
public struct PostbackExportCodec: RecordCodec {
    public let kind = RecordKind.postback
    static let fieldColumns = ["version", "ad-network-id", "campaign-id", "source-identifier", "app-id", "transaction-id",
                               "redownload", "source-app-id", "source-domain", "fidelity-type", "did-win",
                               "postback-sequence-index", "ad-network-identifier", "advertised-item-identifier",
                               "conversion-type", "postback-identifier", "impression-type", "marketplace-identifier",
                               "publisher-item-identifier", "conversion-value", "coarse-conversion-value",
                               "ad-interaction-type", "country-code"]
    public let columns = ["id", "received_at", "protocol", "site", "verdict", "reasons", "signature", "test_key",
                          "duplicates_received", "schema_version", "schema_ambiguous_versions", "kid", "unsigned_fields"]
        + PostbackExportCodec.fieldColumns
    static let ownKeys: Set<String> = ["id", "received_at", "protocol", "site", "verdict", "reasons", "signature", "test_key",
                                       "duplicates_received", "schema_version", "schema_ambiguous_versions", "kid", "unsigned_fields", "extra",
                                       "duplicate_key", "content_hash"]
    let ledger: PostbackLedger?
    let schema: SchemaVersionReader

    /// Which versions of its app's schema a postback's value reads with: one, or the first and
    /// last it could have been set under; nil when there is none to read (no value, no app).
    public typealias SchemaVersionReader = @Sendable (StoredPostback) -> ClosedRange<Int>?

    public init(ledger: PostbackLedger, schema: @escaping SchemaVersionReader = { _ in nil }) {
        self.ledger = ledger
        self.schema = schema
    }

    /// For a warehouse that keeps the retries as rows of their own (ClickHouse): no
    /// `duplicates_received`, which is the ledger's count as of the export and changes after it,
    /// but the postback's `duplicate_key` and `content_hash`, which tell the same postback stored
    /// on two nodes (a device that retried through a failover) from two postbacks.
    public static func withoutLedger(schema: @escaping SchemaVersionReader = { _ in nil }) -> PostbackExportCodec {
        PostbackExportCodec(schema: schema)
    }

    private init(schema: @escaping SchemaVersionReader) {
        ledger = nil
        self.schema = schema
    }

    public func reader() -> (RecordLog.RecordView) -> ExportRow? {
        let schema = self.schema
        guard let ledger else { return { view in StoredPostback.decode(view).map { Self.row($0, retries: nil, schema: schema($0)) } } }
        // One reader per export, which reads rows in id order: a table's counts a block at a time.
        var reader = PostbackLedger.RetryReader(ledger: ledger)
        return { view in StoredPostback.decode(view).map { Self.row($0, retries: { reader.retries(of: $0) }, schema: schema($0)) } }
    }

    static func row(_ postback: StoredPostback, retries: ((UInt64) -> Int)?, schema versions: ClosedRange<Int>? = nil) -> ExportRow {
        let fields = PostbackFields(postback)
        let d = postback.draft
        var members: [JSONMember] = [
            JSONMember(key: "id", value: .number(String(postback.id))),
            JSONMember(key: "received_at", value: .string(postback.receivedAt.rfc3339)),
            JSONMember(key: "protocol", value: .string(postback.protocol.name)),
            JSONMember(key: "site", value: .string(d.site)),
            JSONMember(key: "verdict", value: .string(d.verdict.name)),
            JSONMember(key: "reasons", value: .array(d.reasons.map { .string($0) })),
            JSONMember(key: "signature", value: .string(d.signature.name)),
        ]
        if let key = d.keyName { members.append(JSONMember(key: "test_key", value: .string(key))) }
        if let retries {
            members.append(JSONMember(key: "duplicates_received", value: .number(String(retries(postback.id)))))
        } else {
            members.append(JSONMember(key: "duplicate_key", value: .string(d.duplicateKey)))
            members.append(JSONMember(key: "content_hash", value: .number(String(d.contentHash))))
        }
        let decided = versions.flatMap { $0.count == 1 ? $0.lowerBound : nil }
        let ambiguous = versions.map { $0.count > 1 ? "\($0.lowerBound)-\($0.upperBound)" : "" } ?? ""
        members.append(JSONMember(key: "schema_version", value: decided.map { .number(String($0)) } ?? .null))
        members.append(JSONMember(key: "schema_ambiguous_versions", value: .string(ambiguous)))
        if let kid = fields.kid { members.append(JSONMember(key: "kid", value: .string(kid))) }
        members.append(JSONMember(key: "unsigned_fields", value: .array(fields.unsigned.map { .string($0) })))
        var extra: [JSONMember] = []
        for member in fields.members {
            if ownKeys.contains(member.key) { extra.append(member) } else { members.append(member) }
        }
        if !extra.isEmpty { members.append(JSONMember(key: "extra", value: .object(extra))) }

        var cells = [String(postback.id), postback.receivedAt.rfc3339, postback.protocol.name, d.site, d.verdict.name,
                     d.reasons.joined(separator: ";"), d.signature.name, d.keyName ?? "", retries.map { String($0(postback.id)) } ?? "",
                     decided.map(String.init) ?? "", ambiguous, fields.kid ?? "",
                     fields.unsigned.joined(separator: ";")]
        for key in fieldColumns {
            let text: String = switch fields.value(key) {
            case .string(let s)?: s
            case .number(let n)?: n
            case .bool(let b)?: b ? "true" : "false"
            case .some(let other): other.serialized()
            case nil: ""
            }
            cells.append(text)
        }
        return ExportRow(members: members, cells: cells)
    }
}

/// A stored postback's fields under their own wire names: the body's members for SKAdNetwork;
/// for AdAttributionKit the JWS payload as decoded, the envelope's unsigned members beside it,
/// the `kid`, and the list of which members are unsigned.
public struct PostbackFields {
    public var members: [JSONMember] = []
    public var kid: String?
    public var unsigned: [String] = []

    public init(_ postback: StoredPostback) {
        self.init(postback.protocol, body: postback.draft.body)
    }

    /// A body as `proto`'s path would take it, stored or not.
    public init(_ proto: AttributionProtocol, body bytes: [UInt8]) {
        guard case .object(let body)? = try? JSONParser(maxDepth: 64).parse(bytes) else { return }
        switch proto {
        case .adattributionkit:
            if case .string(let text)? = body.first(where: { $0.key == "jws-string" })?.value, let jws = CompactJWS(text) {
                if case .object(let header)? = try? JSONParser().parse(jws.header),
                   case .string(let kid)? = header.first(where: { $0.key == "kid" })?.value {
                    self.kid = kid
                }
                if case .object(let payload)? = try? JSONParser(maxDepth: 64).parse(jws.payload) { members = payload }
            }
            for member in body where !members.contains(where: { $0.key == member.key }) {
                members.append(member)
                if member.key != "jws-string" { unsigned.append(member.key) }
            }
        default:
            members = body
            // SKAdNetwork signs neither conversion value nor country code, nor keys added on the way.
            let signed = Set(["version", "ad-network-id", "campaign-id", "source-identifier", "app-id", "transaction-id",
                              "redownload", "source-app-id", "source-domain", "fidelity-type", "did-win",
                              "postback-sequence-index", "attribution-signature"])
            unsigned = body.map(\.key).filter { !signed.contains($0) }
        }
    }

    public func value(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
}
