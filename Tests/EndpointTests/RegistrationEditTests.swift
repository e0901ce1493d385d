import Foundation
import RawHTTPClient
import Testing
@testable import Endpoint

/// What the page's forms need beyond registering: a campaign changed or ended, a source site's
/// 256 ids and when each frees up, and viewer tokens made and revoked over the API.
@Suite struct RegistrationEditTests {
    static let admin = [("Authorization", "Bearer test-token")]
    static let winter = #"{"source_site":"news.example","source_id":40,"destination":"shop.example","name":"Winter sale","starts_at":"2026-11-01T00:00:00Z"}"#

    static func send(_ endpoint: LiveEndpoint, _ method: String, _ path: String, _ body: String = "", token: String = "test-token") -> RawResponse {
        endpoint.request(method, path, headers: [("Authorization", "Bearer \(token)")], body: Array(body.utf8))
    }

    @Test func aCampaignIsRenamedOrEndedAndItsIdFreesUpSevenDaysAndTwoAfter() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        func at(_ time: String) { #expect(Self.send(endpoint, "POST", "/admin/clock", #"{"now":"\#(time)"}"#).status == 200) }
        at("2026-11-20T10:00:00Z")
        #expect(Self.send(endpoint, "POST", "/api/campaigns", Self.winter).status == 201)
        func ids() throws -> [String: Any] { json(try endpoint.get("/api/campaigns/source-ids?source_site=news.example")) }
        var picker = try ids()
        var forty = (picker["source_ids"] as! [[String: Any]])[40]
        #expect(picker["free"] as? Int == 255 && forty["free"] as? Bool == false && forty["campaign"] as? String == "Winter sale")
        #expect(forty["busy_until"] is NSNull, "no end: held until it is given one")
        // Ended now: the id is busy for 7 days of clicks converting and 48 hours of reports.
        let ended = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Winter%20sale",
                              Self.winter.replacingOccurrences(of: "}", with: #","ends_at":"2026-11-20T10:00:00Z"}"#))
        #expect(ended.status == 200, "\(ended.bodyText)")
        picker = try ids()
        forty = (picker["source_ids"] as! [[String: Any]])[40]
        #expect(forty["busy_until"] as? String == "2026-11-29T10:00:00.000Z")
        at("2026-11-29T10:00:00Z")
        #expect(((try ids())["source_ids"] as! [[String: Any]])[40]["free"] as? Bool == false, "its last moment")
        at("2026-11-29T10:00:00.001Z")
        #expect(((try ids())["source_ids"] as! [[String: Any]])[40]["free"] as? Bool == true)
        // Renamed: the same campaign under a new name; the rest is fixed, and says why.
        let renamed = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Winter%20sale",
                                Self.winter.replacingOccurrences(of: "Winter sale", with: "Winter sale 2026").replacingOccurrences(of: "}", with: #","ends_at":"2026-11-20T10:00:00Z"}"#))
        #expect(renamed.status == 200)
        for (field, from, to) in [("source_id", "\"source_id\":40", "\"source_id\":41"), ("destination", "shop.example", "other.example"),
                                  ("starts_at", "2026-11-01", "2026-11-02")] {
            let refused = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Winter%20sale%202026",
                                    Self.winter.replacingOccurrences(of: "Winter sale", with: "Winter sale 2026").replacingOccurrences(of: from, with: to))
            #expect(refused.status == 422 && json(refused)["field"] as? String == field && json(refused)["rule"] as? String == "immutable_field", "\(field): \(refused.bodyText)")
        }
        let missing = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Nothing", Self.winter)
        #expect(missing.status == 404 && json(missing)["rule"] as? String == "unknown_campaign")
        // An end before the start, or one that makes the id clash with a later campaign, is refused; nothing changes.
        #expect(Self.send(endpoint, "POST", "/api/campaigns", #"{"source_site":"news.example","source_id":40,"destination":"shop.example","name":"Spring","starts_at":"2026-12-10T00:00:00Z"}"#).status == 201)
        let clash = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Winter%20sale%202026",
                              Self.winter.replacingOccurrences(of: "Winter sale", with: "Winter sale 2026").replacingOccurrences(of: "}", with: #","ends_at":"2026-12-05T00:00:00Z"}"#))
        #expect(clash.status == 409 && json(clash)["rule"] as? String == "source_id_in_use")
        let before = Self.send(endpoint, "PUT", "/api/campaigns?source_site=news.example&name=Winter%20sale%202026",
                               Self.winter.replacingOccurrences(of: "Winter sale", with: "Winter sale 2026").replacingOccurrences(of: "}", with: #","ends_at":"2026-10-01T00:00:00Z"}"#))
        #expect(before.status == 422 && json(before)["rule"] as? String == "ends_before_start")
        let campaigns = try JSONSerialization.jsonObject(with: Data(try endpoint.get("/api/campaigns").body)) as! [[String: Any]]
        #expect(campaigns.map { $0["name"] as! String } == ["Winter sale 2026", "Spring"])
        #expect(campaigns[0]["ends_at"] as? String == "2026-11-20T10:00:00.000Z")
        // The picker is the source site's owner's to read; another advertiser's token is refused.
        let acme = try AccessTests.token(endpoint, advertiser: "acme")
        #expect(Self.send(endpoint, "GET", "/api/campaigns/source-ids?source_site=news.example", token: acme).status == 403)
        #expect(Self.send(endpoint, "GET", "/api/campaigns/source-ids", token: acme).status == 400)
        #expect(Self.send(endpoint, "GET", "/api/campaigns/source-ids?source_site=news.example&x=1").status == 400)
    }

    @Test func thePixelTestShowsTheRedirectAndRecordsNoTrigger() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        #expect(Self.send(endpoint, "POST", "/api/conversions", #"{"site":"shop.example","name":"purchase","trigger_data":3,"priority":7}"#).status == 201)
        let same = json(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=purchase&source=https://news.example"))
        #expect(same["pixel"] as? String == "https://shop.example/conversion-pixel?conversion=purchase&source=https%3A%2F%2Fnews.example")
        #expect(same["status"] as? Int == 302)
        #expect(same["location"] as? String == "https://shop.example/.well-known/private-click-measurement/trigger-attribution/03/07?attributionSource=https://news.example")
        let cross = json(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=purchase&publisher=news.example"))
        #expect(cross["pixel"] as? String == "https://news.example/conversion-pixel?conversion=purchase&site=shop.example")
        #expect(cross["location"] as? String == "https://news.example/.well-known/private-click-measurement/trigger-attribution/03/07")
        // What the pixel refuses, the test shows, naming the field.
        let unknown = json(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=refund"))
        #expect(unknown["status"] as? Int == 404 && (unknown["problem"] as? [String: Any])?["rule"] as? String == "unknown_conversion")
        let sameSite = json(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=purchase&source=https://shop.example"))
        #expect(sameSite["status"] as? Int == 422 && (sameSite["problem"] as? [String: Any])?["field"] as? String == "source")
        let unserved = json(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=purchase&publisher=elsewhere.example"))
        #expect((unserved["status"] as? Int).map { $0 >= 400 } == true)
        // Only the site's owner tests its pixel.
        let news = try AccessTests.token(endpoint, advertiser: "news")
        #expect(Self.send(endpoint, "GET", "/api/conversions/pixel-test?site=shop.example&conversion=purchase", token: news).status == 403)
        // Nothing was recorded: no trigger is held.
        #expect(try endpoint.get("/metrics").bodyText.contains("attribution_triggers_in_memory 0\n"))
    }

    @Test func viewerTokensAreMadeOnceAndRevoked() throws {
        let endpoint = try AccessTests.endpoint()
        defer { endpoint.stop() }
        let made = Self.send(endpoint, "POST", "/api/viewer-tokens", #"{"label":"Acme's dashboard","advertiser":"acme"}"#)
        #expect(made.status == 201, "\(made.bodyText)")
        let token = try #require(json(made)["token"] as? String), id = try #require(json(made)["id"] as? String)
        #expect((json(made)["shown_once"] as? String)?.contains("cannot be shown again") == true)
        // The token reads acme's numbers; the list never shows a token again.
        #expect(Self.send(endpoint, "GET", "/api/whoami", token: token).status == 200)
        let listed = Self.send(endpoint, "GET", "/api/viewer-tokens")
        #expect(listed.bodyText.contains(id) && !listed.bodyText.contains(token) && !listed.bodyText.contains("sha256"))
        // A scoped token lists its advertiser's tokens and cannot make one.
        #expect(Self.send(endpoint, "GET", "/api/viewer-tokens", token: token).bodyText.contains(id))
        let byViewer = Self.send(endpoint, "POST", "/api/viewer-tokens", #"{"label":"mine"}"#, token: token)
        #expect(byViewer.status == 403 && json(byViewer)["rule"] as? String == "viewer_token_read_only")
        for (body, field, rule) in [(#"{"label":"x","advertiser":"nobody"}"#, "advertiser", "unknown_advertiser"), (#"{"advertiser":"acme"}"#, "label", "missing_field"),
                                    (#"{"label":""}"#, "label", "invalid_label"), (#"{"label":"x","role":"admin"}"#, "role", "unknown_field"),
                                    (#"{"label":42}"#, "label", "wrong_type"), (#"{"label":"\#(String(repeating: "x", count: 200))"}"#, "label", "invalid_label")] {
            let refused = Self.send(endpoint, "POST", "/api/viewer-tokens", body)
            #expect(refused.status == 422 && json(refused)["field"] as? String == field && json(refused)["rule"] as? String == rule, "\(body): \(refused.bodyText)")
        }
        #expect(Self.send(endpoint, "POST", "/api/viewer-tokens", "[]").status == 400)
        // Revoked: the token reads nothing any more.
        #expect(Self.send(endpoint, "DELETE", "/api/viewer-tokens?id=\(id)").status == 204)
        #expect(Self.send(endpoint, "DELETE", "/api/viewer-tokens?id=\(id)").status == 404)
        #expect(Self.send(endpoint, "GET", "/api/whoami", token: token).status == 401)
    }
}
