import AdAttributionKit
import HTTPServer
import Postbacks
import Primitives
import ReportStore

/// A stored postback's fields under their own wire names, as the export shows them: the body's
/// members for SKAdNetwork; for AdAttributionKit the JWS payload as decoded, the envelope's
/// unsigned members beside it, the `kid`, and the list of which members are unsigned.
struct PostbackFields {
    var members: [JSONMember] = []
    var kid: String?
    var unsigned: [String] = []

    init(_ postback: StoredPostback) {
        guard case .object(let body)? = try? JSONParser(maxDepth: 64).parse(postback.draft.body) else { return }
        switch postback.protocol {
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

    func value(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
}

/// One stored postback as a line of `/api/postbacks`:
///
/// `{"id":3,"received_at":"…","protocol":"skadnetwork","site":"app.example","verdict":"accepted",
///   "reasons":[],"signature":"apple","duplicates_received":2,"unsigned_fields":["conversion-value"],
///   "version":"4.0","ad-network-id":"…",…}`
///
/// The postback's members keep their wire names (dashes), so they never collide with the
/// endpoint's own snake_case keys; a member that would is under `extra`.
enum PostbackExportLine {
    static let ownKeys: Set<String> = ["id", "received_at", "protocol", "site", "verdict", "reasons", "signature", "test_key",
                                       "duplicates_received", "kid", "unsigned_fields", "extra"]

    static func write(_ postback: StoredPostback, retries: Int, to out: inout String) {
        let fields = PostbackFields(postback)
        let d = postback.draft
        out += "{\"id\":\(postback.id),\"received_at\":\"\(postback.receivedAt.rfc3339)\",\"protocol\":\"\(postback.protocol.name)\",\"site\":"
        JSONValue.writeString(d.site, to: &out)
        out += ",\"verdict\":\"\(d.verdict.name)\",\"reasons\":"
        JSONValue.array(d.reasons.map { .string($0) }).write(to: &out)
        out += ",\"signature\":\"\(d.signature.name)\""
        if let key = d.keyName {
            out += ",\"test_key\":"
            JSONValue.writeString(key, to: &out)
        }
        out += ",\"duplicates_received\":\(retries)"
        if let kid = fields.kid {
            out += ",\"kid\":"
            JSONValue.writeString(kid, to: &out)
        }
        out += ",\"unsigned_fields\":"
        JSONValue.array(fields.unsigned.map { .string($0) }).write(to: &out)
        var extra: [JSONMember] = []
        for member in fields.members {
            guard !ownKeys.contains(member.key) else {
                extra.append(member)
                continue
            }
            out += ","
            JSONValue.writeString(member.key, to: &out)
            out += ":"
            member.value.write(to: &out)
        }
        if !extra.isEmpty {
            out += ",\"extra\":"
            JSONValue.object(extra).write(to: &out)
        }
        out += "}\n"
    }
}

/// One stored postback as a CSV row: the same facts, one column per field either protocol has.
enum PostbackCSVLine {
    static let fieldColumns = ["version", "ad-network-id", "campaign-id", "source-identifier", "app-id", "transaction-id",
                               "redownload", "source-app-id", "source-domain", "fidelity-type", "did-win",
                               "postback-sequence-index", "ad-network-identifier", "advertised-item-identifier",
                               "conversion-type", "postback-identifier", "impression-type", "marketplace-identifier",
                               "publisher-item-identifier", "conversion-value", "coarse-conversion-value",
                               "ad-interaction-type", "country-code"]
    static let columns = ["id", "received_at", "protocol", "site", "verdict", "reasons", "signature", "test_key",
                          "duplicates_received", "kid", "unsigned_fields"] + fieldColumns
    static let header = columns.joined(separator: ",") + "\r\n"

    static func write(_ postback: StoredPostback, retries: Int, to out: inout String) {
        let fields = PostbackFields(postback)
        let d = postback.draft
        var row = [String(postback.id), postback.receivedAt.rfc3339, postback.protocol.name, d.site, d.verdict.name,
                   d.reasons.joined(separator: ";"), d.signature.name, d.keyName ?? "", String(retries), fields.kid ?? "",
                   fields.unsigned.joined(separator: ";")]
        for key in fieldColumns {
            let text: String = switch fields.value(key) {
            case .string(let s)?: s
            case .number(let n)?: n
            case .bool(let b)?: b ? "true" : "false"
            case .some(let other): other.serialized()
            case nil: ""
            }
            row.append(text)
        }
        out += row.map(CSV.field).joined(separator: ",") + "\r\n"
    }
}

/// Streams `/api/postbacks` from disk as the socket drains.
final class PostbackExportStream: HTTPBodyStream, @unchecked Sendable {
    private let cursor: PostbackCursor
    private let ledger: PostbackLedger
    private let csv: Bool
    private var wroteHeader = false

    init(cursor: PostbackCursor, ledger: PostbackLedger, csv: Bool) {
        self.cursor = cursor
        self.ledger = ledger
        self.csv = csv
    }

    func next(maxBytes: Int) -> [UInt8]? {
        var text = ""
        if csv && !wroteHeader {
            text = PostbackCSVLine.header
            wroteHeader = true
        }
        while text.utf8.count < maxBytes - 4096, let postback = cursor.next() {
            let retries = ledger.retries(of: postback.id)
            if csv {
                PostbackCSVLine.write(postback, retries: retries, to: &text)
            } else {
                PostbackExportLine.write(postback, retries: retries, to: &text)
            }
        }
        return text.isEmpty ? nil : Array(text.utf8)
    }
}
