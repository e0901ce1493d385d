import AppleAds
import Foundation
import HTTPServer
import Primitives

/// The app's side of Apple Ads attribution:
/// - `POST /apple-ads/attribution` takes the token from `AAAttribution.attributionToken()` as
///   `text/plain`, stores it, and answers 202 with an unguessable id (`Location` names where to
///   read the answer). The same token posted again gets the same id.
/// - `GET /apple-ads/attribution/{id}` answers where that token stands, with Apple's record once
///   there is one.
/// Open without the token, as the app calls them. Never sets or reads a cookie; keeps nothing
/// about the device or the request but the token and Apple's answer.
struct AppleAdsRoutes: Sendable {
    static let path = "/apple-ads/attribution"

    let outbox: AppleAdsOutbox
    /// The served site, the metrics, the arrivals and the clock.
    let context: HandlerContext

    var routes: [RouteGroup] {
        [
            RouteGroup("apple ads", routes: [
                Route(.exact(Self.path), methods: ["POST"], handler: take),
                Route(.prefix(Self.path + "/"), methods: ["GET", "HEAD"], answer: read),
            ]),
        ]
    }

    func take(_ request: HTTPRequest, responder: HTTPResponder) throws {
        let site = try context.servedSite(of: request, what: "the token")
        context.arrived(.appleAdsTokens, at: site)
        let token = try AppleAdsToken.read(request.body)
        try outbox.requireReady()
        let answer = AnswerOnCommit(responder: responder, metrics: context.metrics, failure: "the token could not be stored")
        switch outbox.take(token: token, site: site, completion: answer.completion(answer: Self.accepted)) {
        // Taken: well-formed and kept (Apple's answer says later whether it was an install).
        case .queued: context.accepted(.appleAdsTokens, at: site, time: context.clock())
        case .known(let entry):
            context.accepted(.appleAdsTokens, at: site, time: context.clock())
            responder.respond(Self.accepted(entry))
        case .backlogged:
            var response = Problem(status: 503, rule: "apple_ads_backlogged",
                                   detail: "\(outbox.maxPending) Apple Ads tokens are waiting for Apple's answer; post this one again later (a token is good for 24 hours)").response
            response.headers.replace(name: "Retry-After", value: "60")
            responder.respond(response)
        case .unreadable:
            responder.respond(Self.answerUnreadable.response)
        }
    }

    static let answerUnreadable = Problem(status: 503, rule: "apple_ads_answer_unreadable",
                                          detail: "this token was answered, and the record of its answer cannot be read right now; ask again later")

    static func accepted(_ entry: AppleAdsOutbox.Entry) -> HTTPResponse {
        var response = JSONResponse.make(202, describe(entry))
        response.headers.add(name: "Location", value: path + "/" + entry.publicID)
        return response
    }

    func read(_ request: HTTPRequest) throws -> HTTPResponse {
        let id = String(request.path.dropFirst(Self.path.count + 1))
        try outbox.requireReady()
        let found: AppleAdsOutbox.Entry?
        do { found = try outbox.entry(publicID: id) } catch { throw Self.answerUnreadable }
        guard let entry = found else {
            throw Problem(status: 404, rule: "unknown_token_id", field: "id",
                          detail: "no token is held under this id: a token's answer is kept here for 24 hours after Apple's final answer (/api/apple-ads lists every token)")
        }
        return JSONResponse.make(200, Self.describe(entry))
    }

    /// `{"id":…,"status":…,"received_at":…,"calls":…,"last_http_status":…,"next_call_at":…,
    ///   "answered_at":…,"record":{Apple's fields}|null}`
    static func describe(_ entry: AppleAdsOutbox.Entry) -> String {
        var out = "{\"id\":\"\(entry.publicID)\",\"status\":\"\(entry.status.name)\",\"received_at\":\"\(entry.receivedAt.rfc3339)\""
        out += ",\"calls\":\(entry.calls),\"last_http_status\":" + (entry.lastHTTPStatus.map(String.init) ?? "null")
        out += ",\"next_call_at\":" + (entry.status == .pending ? entry.nextAttempt.map { "\"\($0.rfc3339)\"" } ?? "null" : "null")
        out += ",\"answered_at\":" + (entry.answeredAt.map { "\"\($0.rfc3339)\"" } ?? "null")
        out += ",\"record\":" + (entry.record?.json ?? "null") + "}"
        return out
    }
}
