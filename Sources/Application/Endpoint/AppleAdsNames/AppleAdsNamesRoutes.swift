import HTTPServer
import Primitives

/// `GET /api/apple-ads/names` (token): where the Apple Ads Platform API's lookups stand (how many
/// names, the last refresh, the last error, the requests made). `POST /api/apple-ads/names/refresh`
/// (admin): a refresh now, on the lookups' thread (202), at most once every few seconds (429).
struct AppleAdsNamesRoutes: SurfaceRoutes {
    let context: HandlerContext
    let lookup: AppleAdsNameLookup?
    static let path = "/api/apple-ads/names"

    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("apple ads names", gate: bearer, routes: [
                Route(.exact(Self.path), methods: ["GET", "HEAD"]) { request in
                    // The whole ad account's counts and Apple's last error: the operator's, not one advertiser's.
                    let readable = try scope(request)
                    guard readable.isEverything else {
                        throw Problem(status: 403, rule: "outside_scope", detail: "the Apple Ads names are the whole ad account's; this token reads \(readable.advertiser.map { "advertiser \($0.id)'s" } ?? "no") sites alone")
                    }
                    guard let lookup else { return JSONResponse.make(200, "{\"configured\":false}") }
                    let book = lookup.names.book
                    func time(_ ms: Int64?) -> String { ms.map { "\"" + Timestamp(millisecondsSinceEpoch: $0).rfc3339 + "\"" } ?? "null" }
                    var out = "{\"configured\":true,\"refreshed_at\":\(time(book.refreshedAt)),\"attempted_at\":\(time(book.attemptedAt)),\"last_error\":"
                    if let error = book.lastError { JSONValue.writeString(error, to: &out) } else { out += "null" }
                    out += ",\"campaigns\":\(book.campaigns.count),\"ad_groups\":\(book.adGroups.count),\"keywords\":\(book.keywords.count)"
                    return JSONResponse.make(200, out + ",\"requests\":\(book.requests)}")
                },
                Route(.exact(Self.path + "/refresh"), methods: ["POST"]) { _ in
                    guard let lookup else {
                        throw Problem(status: 409, rule: "apple_ads_platform_not_configured",
                                      detail: "names are looked up only with --apple-ads-platform FILE (docs/APPLE.md §3)")
                    }
                    let (asked, retryAfter) = lookup.askRefresh()
                    guard asked else {
                        var response = Problem(status: 429, rule: "refresh_too_soon",
                                               detail: "a refresh was asked less than \(Int(AppleAdsNameLookup.askedInterval)) s ago").response
                        response.headers.add(name: "Retry-After", value: String(Int(retryAfter.rounded(.up))))
                        return response
                    }
                    return JSONResponse.make(202, "{\"refreshing\":true}")
                },
            ]),
        ]
    }
}
