import Foundation
import HTTPServer
import Primitives

/// The site owners' token keys, with the token: `GET /api/token-keys` lists them, and
/// `POST /api/token-keys {"site":…,"serves_from":RFC 3339}` schedules a successor (a rotation).
///
/// Rotating drops every report still in flight for the old key: before it sends a report the
/// browser fetches the key again and drops the report if the key id changed. So a rotation is
/// scheduled for a chosen time, and the old key stays to verify what it signed before.
struct TokenKeyRoutes: SurfaceRoutes {
    let context: HandlerContext
    static let path = "/api/token-keys"

    let keys: TokenKeyStore
    /// Making an RSA-4096 key takes seconds: never on the event loop.
    let pool: WorkerPool
    /// With `--token-key-rotation-days`.
    var rotation: TokenKeyRotation? = nil

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("token keys", gate: bearer, routes: [
                Route(.exact(Self.path), methods: ["GET", "HEAD"], answer: list),
                Route(.exact(Self.path), methods: ["POST"], handler: schedule),
            ]),
        ]
    }

    func list(_ request: HTTPRequest) throws -> HTTPResponse {
                let readable = try scope(request)
        let rows = keys.all.filter { readable.allows($0.site) }.sorted { ($0.site, $0.servesFrom.millisecondsSinceEpoch) < ($1.site, $1.servesFrom.millisecondsSinceEpoch) }
        var json = "{\"keys\":[" + rows.map { Self.describe($0, state: keys.state(of: $0, at: now)) }.joined(separator: ",") + "]"
        // When each served site's next key comes: on the rotation's schedule, or as scheduled by hand.
        json += ",\"rotation_days\":" + (rotation.map { String($0.days) } ?? "null") + ",\"next_keys\":{"
        json += keys.servedSites.filter(readable.allows).map { site -> String in
            var member = ""
            JSONValue.writeString(site, to: &member)
            let next = rotation?.nextRotation(for: site) ?? keys.scheduledSuccessor(for: site)?.servesFrom
            return member + ":" + (next.map { "\"\($0.rfc3339)\"" } ?? "null")
        }.joined(separator: ",")
        return JSONResponse.make(200, json + "}}")
    }

    static func describe(_ key: TokenKeyStore.Key, state: TokenKeyStore.State) -> String {
        var json = "{\"site\":"
        JSONValue.writeString(key.site, to: &json)
        json += ",\"key_id\":\"\(key.keyID)\",\"state\":\"\(state.rawValue)\",\"created_at\":\"\(key.createdAt.rfc3339)\""
        json += ",\"serves_from\":\"\(key.servesFrom.rfc3339)\"}"
        return json
    }

    func schedule(_ request: HTTPRequest, responder: HTTPResponder) throws {
        func invalid(_ rule: String, _ field: String, _ detail: String) -> Problem {
            Problem(status: 422, rule: rule, field: field, detail: detail)
        }
        guard case .object(let members) = try JSONParser().parseBody(request.body) else {
            throw Problem(status: 400, rule: "not_an_object", detail: "the body must be a JSON object")
        }
        let fields = FieldReader(members)
        guard case .string(let site)? = fields.value("site") else { throw invalid("missing_field", "site", "site is required (a served site)") }
        guard keys.servedSites.contains(site) else {
            throw invalid("site_not_served", "site", "site \"\(site)\" is not served by this endpoint (it serves \(keys.servedSites.joined(separator: ", ")))")
        }
                var servesFrom = now
        if let value = fields.value("serves_from") {
            guard case .string(let text) = value, let time = Timestamp(rfc3339: text) else {
                throw invalid("invalid_time", "serves_from", "serves_from must be an RFC 3339 time")
            }
            guard time >= now else { throw invalid("time_in_the_past", "serves_from", "serves_from must not be before now (\(now.rfc3339))") }
            servesFrom = time
        }
        let (keys, servesFromTime) = (self.keys, servesFrom)
        guard pool.submit({
            do {
                let key = try keys.schedule(site: site, servesFrom: servesFromTime)
                EventLog.write("token_key_created", ["site": .string(site), "key_id": .string(key.keyID),
                                                     "serves_from": .string(servesFromTime.rfc3339)])
                responder.respond(JSONResponse.make(201, Self.describe(key, state: keys.state(of: key, at: now))))
            } catch {
                responder.respond(Problem(status: 503, rule: "store_unavailable", detail: "the new key could not be kept: \(error)").response)
            }
        }) else {
            throw Problem(status: 503, rule: "signing_backlogged", detail: "the signing threads are busy; ask again later")
        }
    }
}
