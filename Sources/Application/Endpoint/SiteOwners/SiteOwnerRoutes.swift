import Primitives
import SiteOwners
import Foundation
import HTTPServer

/// What site owners use: the registries' admin API and the conversion pixel (the well-known
/// trigger URL it redirects to is PCM's, `TriggerHandler`). Never sets or reads a cookie.
struct SiteOwnerRoutes: SurfaceRoutes {
    let context: HandlerContext
    static let pixelPath = "/conversion-pixel"

    let book: SiteOwnerStore

    /// The pixel faces every browser; the registrations need the token.
    func routes(bearer: @escaping RouteGroup.Gate) -> [RouteGroup] {
        [
            RouteGroup("conversion pixel", routes: [
                Route(.exact(Self.pixelPath), methods: ["GET", "HEAD"], answer: pixel),
            ]),
            RouteGroup("registrations", gate: bearer, routes:
                registrations("/api/conversions", list: \.conversions, keys: ("site", "name"),
                              read: RegistryInput.conversion(from:), site: \.site,
                              add: { (registry, item, rules) throws(RequestProblem) in try registry.add(item, siteRules: rules) },
                              remove: { $0.removeConversion(site: $1, name: $2) })
                + registrations("/api/campaigns", list: \.campaigns, keys: ("source_site", "name"),
                                read: RegistryInput.campaign(from:), site: \.sourceSite,
                                add: { (registry, item, rules) throws(RequestProblem) in try registry.add(item, siteRules: rules) },
                                remove: { $0.removeCampaign(sourceSite: $1, name: $2) })
                + [Route(.exact("/api/conversions/pixel-test"), methods: ["GET", "HEAD"], answer: pixelTest),
                   Route(.exact("/api/campaigns"), methods: ["PUT"], answer: changeCampaign),
                   Route(.exact("/api/campaigns/source-ids"), methods: ["GET", "HEAD"], answer: sourceIDs)]),
        ]
    }

    /// `PUT /api/campaigns?source_site=&name=` with the campaign as it should be: a new name, or
    /// a new end (`ends_at`: to end it now, or move its end). The rest is fixed (`Registry.replaceCampaign`).
    func changeCampaign(_ request: HTTPRequest) throws -> HTTPResponse {
        let items = Dictionary(request.queryItems, uniquingKeysWith: { first, _ in first })
        for item in request.queryItems where item.name != "source_site" && item.name != "name" {
            throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "PUT takes ?source_site=…&name=… and the campaign as its body")
        }
        guard let site = items["source_site"], let name = items["name"] else {
            throw Problem(status: 400, rule: "missing_parameter", field: items["source_site"] == nil ? "source_site" : "name",
                          detail: "PUT needs ?source_site=…&name=…: the campaign to change")
        }
        let parsed = try JSONParser().parseBody(request.body)
        var changed = ""
        try book.update { (registry) throws(RequestProblem) in
            let campaign = try RegistryInput.campaign(from: parsed)
            try registry.replaceCampaign(sourceSite: site, name: name, with: campaign, siteRules: book.siteRules)
            changed = JSONResponse.encode(campaign)
        }
        return JSONResponse.make(200, changed)
    }

    /// `GET /api/conversions/pixel-test?site=shop.example&conversion=purchase[&publisher=news.example][&source=…]`:
    /// the pixel loaded as a browser would load it from `publisher` (the cross-site form) or from
    /// `site` itself (the same-site form), through the pixel's own code, and the redirect it
    /// answers, which is not followed: no trigger is recorded. For the page's "test this pixel".
    func pixelTest(_ request: HTTPRequest) throws -> HTTPResponse {
        var site: String?, conversion: String?, publisher: String?, source: String?
        for item in request.queryItems {
            switch item.name {
            case "site": site = item.value
            case "conversion": conversion = item.value
            case "publisher": publisher = item.value.isEmpty ? nil : item.value
            case "source": source = item.value.isEmpty ? nil : item.value
            case "advertiser": continue
            default: throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "use site, conversion, publisher and source")
            }
        }
        guard let site, !site.isEmpty else { throw Problem(status: 400, rule: "missing_parameter", field: "site", detail: "name the advertiser's site") }
        try scope(request).require(site)
        // The pixel's query, as the tag writes it.
        var query = "conversion=" + Self.encoded(conversion ?? "")
        if publisher != nil { query += "&site=" + Self.encoded(site) }
        if let source { query += "&source=" + Self.encoded(source) }
        let host = publisher ?? site
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        let loaded = HTTPRequest(method: "GET", target: Self.pixelPath + "?" + query, headers: headers)
        let pixelURL = "https://" + host + Self.pixelPath + "?" + query
        var out = "{\"pixel\":"
        JSONValue.writeString(pixelURL, to: &out)
        do {
            let answer = try pixel(loaded)
            out += ",\"status\":\(answer.status),\"location\":"
            JSONValue.writeString(answer.headers["Location"] ?? "", to: &out)
            out += ",\"problem\":null"
        } catch {
            let problem = (error as? Problem) ?? (error as? RequestProblem).map { Problem($0) } ?? Problem(status: 500, rule: "internal", detail: "\(error)")
            out += ",\"status\":\(problem.status),\"location\":null,\"problem\":{\"rule\":"
            JSONValue.writeString(problem.rule, to: &out)
            out += ",\"field\":"
            if let field = problem.field { JSONValue.writeString(field, to: &out) } else { out += "null" }
            out += ",\"detail\":"
            JSONValue.writeString(problem.detail, to: &out)
            out += "}"
        }
        return JSONResponse.make(200, out + "}")
    }

    /// A query value as the tag writes it: letters, digits and `-._~` as they are, the rest %-encoded.
    static func encoded(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || [0x2D, 0x2E, 0x5F, 0x7E].contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// `GET /api/campaigns/source-ids?source_site=`: each of the site's 256 ids now, free or whose
    /// and until when, for the page's id picker. The source site's owner's to read, as its campaigns are.
    func sourceIDs(_ request: HTTPRequest) throws -> HTTPResponse {
        var site: String?
        for item in request.queryItems {
            switch item.name {
            case "source_site": site = item.value
            case "advertiser": continue
            default: throw Problem(status: 400, rule: "unknown_parameter", field: item.name, detail: "use source_site and advertiser")
            }
        }
        guard let site, !site.isEmpty else {
            throw Problem(status: 400, rule: "missing_parameter", field: "source_site", detail: "name the publisher's site: ?source_site=news.example")
        }
        try scope(request).require(site, field: "source_site")
        let states = book.registry.sourceIDs(of: site, at: now)
        var out = "{\"source_site\":"
        JSONValue.writeString(site, to: &out)
        out += ",\"at\":\"\(now.rfc3339)\",\"free\":\(states.filter(\.isFree).count),\"source_ids\":["
        out += states.map { state in
            var line = "{\"source_id\":\(state.sourceID),\"free\":\(state.isFree)"
            if let holder = state.holder {
                line += ",\"campaign\":"
                JSONValue.writeString(holder.name, to: &line)
                line += ",\"busy_until\":" + (holder.busyUntil.map { "\"\($0.rfc3339)\"" } ?? "null")
            }
            if let next = state.next {
                line += ",\"next_campaign\":"
                JSONValue.writeString(next.name, to: &line)
                line += ",\"next_starts_at\":\"\(next.startsAt.rfc3339)\""
            }
            return line + "}"
        }.joined(separator: ",")
        return JSONResponse.make(200, out + "]}")
    }

    // MARK: - Admin API (the route table has checked the token and the method)

    /// One kind of registration's routes: list it, register one (checked against every rule and
    /// the others, then saved), remove one by its two keys.
    private func registrations<Item: Encodable & Sendable>(
        _ path: String, list: KeyPath<Registry, [Item]> & Sendable, keys: (String, String),
        read: @escaping @Sendable (JSONValue) throws(RequestProblem) -> Item, site: @escaping @Sendable (Item) -> String,
        add: @escaping @Sendable (inout Registry, Item, SiteRules) throws(RequestProblem) -> Void,
        remove: @escaping @Sendable (inout Registry, String, String) -> Bool
    ) -> [Route] {
        [
            Route(.exact(path), methods: ["GET", "HEAD"]) { request in
                let readable = try scope(request)
                // What a scope is shown (`NameDisclosure`): a campaign to its destination's owner too.
                return JSONResponse.make(200, JSONResponse.encode(book.registry.scoped(to: readable.sites)[keyPath: list]))
            },
            Route(.exact(path), methods: ["POST"]) { request in
                try register(request) { json, registry throws(RequestProblem) in
                    let item = try read(json)
                    try add(&registry, item, book.siteRules)
                    try Registrations.requireServed(site(item), field: keys.0, servedSites: context.served.sites)
                    return JSONResponse.encode(item)
                }
            },
            Route(.exact(path), methods: ["DELETE"]) { request in try self.remove(request, keys: keys, remove) },
        ]
    }

    private func register(_ request: HTTPRequest, _ add: (JSONValue, inout Registry) throws(RequestProblem) -> String) throws -> HTTPResponse {
        try Registrations.register(request, in: book, add)
    }

    private func remove(_ request: HTTPRequest, keys: (String, String), _ change: (inout Registry, String, String) -> Bool) throws -> HTTPResponse {
        let items = Dictionary(request.queryItems, uniquingKeysWith: { first, _ in first })
        guard let site = items[keys.0], let name = items[keys.1] else {
            throw Problem(status: 400, rule: "missing_parameter", field: items[keys.0] == nil ? keys.0 : keys.1,
                           detail: "DELETE needs ?\(keys.0)=…&\(keys.1)=…")
        }
        return try Registrations.remove(in: book, notFound: "\(site) has nothing named \"\(name)\"") { change(&$0, site, name) }
    }

    // MARK: - The conversion pixel

    /// `GET /conversion-pixel?conversion=purchase[&source=https://news.example][&site=shop.example]`
    func pixel(_ request: HTTPRequest) throws -> HTTPResponse {
        let (requestSite, port) = try RequestedHost.registrableSite(of: request, trustedProxies: context.trustedProxies, siteRules: book.siteRules, what: "the pixel")
        guard context.served.contains(requestSite) else { throw ServedSites.notServed(what: "the pixel", host: requestSite) }
        var conversionName: String?, source: String?, site: String?
        for (name, value) in request.queryItems {
            switch name {
            case "conversion": conversionName = value
            case "source": source = value
            case "site": site = value
            default:
                throw Problem(status: 400, rule: "unknown_parameter", field: name,
                               detail: "unknown query parameter \"\(name)\"; use conversion, source and site")
            }
        }
        if let site, let violation = book.siteRules.check(site) {
            throw Problem(status: 400, rule: "not_registrable_domain", field: "site", detail: "site \(violation.detail)")
        }
        // Anyone can ask: the refusals say what is wrong with the request, never which sites are
        // served or which conversions a site registered.
        if let site, !context.served.contains(site) {
            throw Problem(status: 422, rule: "site_not_served", field: "site",
                          detail: "site \(site) is not served by this endpoint; its trigger could not be recorded here")
        }
        guard let conversionName, !conversionName.isEmpty else {
            throw Problem(status: 400, rule: "missing_parameter", field: "conversion", detail: "name the conversion: ?conversion=purchase")
        }
        // Same-site form: the pixel is the advertiser's own, so its conversions are the host's.
        // Cross-site form: the publisher serves it, so `site` names the advertiser.
        let destination = site ?? requestSite
        guard let conversion = book.registry.conversion(site: destination, name: conversionName) else {
            throw Problem(status: 404, rule: "unknown_conversion", field: "conversion",
                           detail: "\(destination) has no conversion named \"\(conversionName)\"; GET /api/conversions (with the token) "
                               + "lists those registered, POST /api/conversions registers one")
        }
        let location = try ConversionPixel.location(site: requestSite, port: port, conversion: conversion, source: source,
                                                    siteRules: book.siteRules)
        return HTTPResponse(status: 302, headers: ["Location": location, "Cache-Control": "no-store"], body: [])
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
