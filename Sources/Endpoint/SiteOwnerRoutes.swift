import AttributionCore
import Foundation
import HTTPServer
import ReportStore

/// What site owners use: the registries' admin API, the conversion pixel, the well-known
/// trigger URL it redirects to, and the manual clock. Never sets or reads a cookie.
struct SiteOwnerRoutes: Sendable {
    static let pixelPath = "/conversion-pixel"

    let book: SiteOwnerBook
    let store: ReportStore
    let clock: EndpointClock
    let trustedProxies: [AddressRange]
    let servedSites: Set<String>

    // MARK: - Admin API (the caller has checked the token)

    func conversions(_ request: HTTPRequest) -> HTTPResponse {
        switch request.method {
        case "GET", "HEAD":
            return json(200, Self.encode(book.registry.conversions))
        case "POST":
            return register(request) { json, registry throws(RequestProblem) in
                let conversion = try RegistryInput.conversion(from: json)
                try registry.add(conversion, siteRules: book.siteRules)
                return Self.encode(conversion)
            }
        case "DELETE":
            return remove(request, keys: ("site", "name")) { registry, site, name in registry.removeConversion(site: site, name: name) }
        default:
            return Problem.methodNotAllowed(request, allow: "GET, HEAD, POST, DELETE")
        }
    }

    func campaigns(_ request: HTTPRequest) -> HTTPResponse {
        switch request.method {
        case "GET", "HEAD":
            return json(200, Self.encode(book.registry.campaigns))
        case "POST":
            return register(request) { json, registry throws(RequestProblem) in
                let campaign = try RegistryInput.campaign(from: json)
                try registry.add(campaign, siteRules: book.siteRules)
                return Self.encode(campaign)
            }
        case "DELETE":
            return remove(request, keys: ("source_site", "name")) { registry, site, name in registry.removeCampaign(sourceSite: site, name: name) }
        default:
            return Problem.methodNotAllowed(request, allow: "GET, HEAD, POST, DELETE")
        }
    }

    private func register(_ request: HTTPRequest, _ add: (JSONValue, inout Registry) throws(RequestProblem) -> String) -> HTTPResponse {
        let parsed: JSONValue
        do {
            parsed = try JSONParser().parse(request.body)
        } catch {
            return Problem(status: 400, rule: "invalid_json", detail: "the body is not valid JSON: \(error.description)").response
        }
        var created = ""
        do {
            try book.update { (registry) throws(RequestProblem) in created = try add(parsed, &registry) }
        } catch {
            return Problem(error).response
        }
        return json(201, created)
    }

    private func remove(_ request: HTTPRequest, keys: (String, String), _ change: (inout Registry, String, String) -> Bool) -> HTTPResponse {
        let items = Dictionary(request.queryItems, uniquingKeysWith: { first, _ in first })
        guard let site = items[keys.0], let name = items[keys.1] else {
            return Problem(status: 400, rule: "missing_parameter", field: items[keys.0] == nil ? keys.0 : keys.1,
                           detail: "DELETE needs ?\(keys.0)=…&\(keys.1)=…").response
        }
        var found = false
        do {
            try book.update { (registry) throws(RequestProblem) in found = change(&registry, site, name) }
        } catch {
            return Problem(error).response
        }
        guard found else { return Problem(status: 404, rule: "not_found", detail: "\(site) has nothing named \"\(name)\"").response }
        return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"], body: [])
    }

    // MARK: - The clock

    func setClock(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "POST" else { return Problem.methodNotAllowed(request, allow: "POST") }
        guard case .object(let members)? = try? JSONParser().parse(request.body),
              let member = members.first(where: { $0.key == "now" }), case .string(let text) = member.value,
              let time = Timestamp(rfc3339: text) else {
            return Problem(status: 400, rule: "invalid_time", field: "now",
                           detail: "send {\"now\": \"2026-11-20T10:00:00Z\"} (RFC 3339)").response
        }
        clock.set(time)
        return json(200, "{\"now\":\"\(time.rfc3339)\"}")
    }

    // MARK: - The conversion pixel

    /// `GET /conversion-pixel?conversion=purchase[&source=https://news.example][&site=shop.example]`
    func pixel(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else { return Problem.methodNotAllowed(request, allow: "GET, HEAD") }
        guard let host = sentTo(request), let requestSite = site(ofHost: host) else {
            return Problem(status: 400, rule: "invalid_host", field: "Host", detail: "the pixel needs the Host header of a site").response
        }
        var conversionName: String?, source: String?, site: String?
        for (name, value) in request.queryItems {
            switch name {
            case "conversion": conversionName = value
            case "source": source = value
            case "site": site = value
            default:
                return Problem(status: 400, rule: "unknown_parameter", field: name,
                               detail: "unknown query parameter \"\(name)\"; use conversion, source and site").response
            }
        }
        guard let conversionName, !conversionName.isEmpty else {
            return Problem(status: 400, rule: "missing_parameter", field: "conversion", detail: "name the conversion: ?conversion=purchase").response
        }
        // Same-site form: the pixel is the advertiser's own, so its conversions are the host's.
        // Cross-site form: the publisher serves it, so `site` names the advertiser.
        let destination = site ?? requestSite
        guard let conversion = book.registry.conversion(site: destination, name: conversionName) else {
            let known = book.registry.conversions.filter { $0.site == destination }.map(\.name)
            return Problem(status: 404, rule: "unknown_conversion", field: "conversion",
                           detail: "\(destination) has no conversion named \"\(conversionName)\""
                               + (known.isEmpty ? "; register one with POST /api/conversions" : "; known: \(known.joined(separator: ", "))")).response
        }
        let location: String
        do {
            location = try ConversionPixel.location(host: host, conversion: conversion, source: source, siteRules: book.siteRules)
        } catch {
            return Problem(error).response
        }
        return HTTPResponse(status: 302, headers: ["Location": location, "Cache-Control": "no-store"], body: [])
    }

    // MARK: - The well-known trigger URL

    /// Records the trigger once it is on disk, then answers a 1×1 GIF.
    func trigger(_ request: HTTPRequest, responder: HTTPResponder) {
        guard request.method == "GET" || request.method == "HEAD" else {
            return responder.respond(Problem.methodNotAllowed(request, allow: "GET, HEAD"))
        }
        guard let host = sentTo(request), let site = site(ofHost: host) else {
            return responder.respond(Problem(status: 400, rule: "invalid_host", field: "Host",
                                             detail: "the trigger URL needs the Host header of a site").response)
        }
        guard servedSites.isEmpty || servedSites.contains(site) else {
            return responder.respond(Problem(status: 421, rule: "site_not_served", field: "Host",
                                             detail: "this endpoint does not serve \(site)").response)
        }
        let path: TriggerPath
        do {
            path = try TriggerPath.parse(path: request.path, queryItems: request.queryItems, siteRules: book.siteRules)
        } catch {
            return responder.respond(Problem(error).response)
        }
        let book = self.book
        store.appendTrigger(site: site, triggerData: path.triggerData, priority: path.priority,
                            attributionSource: path.attributionSource) { result in
            switch result {
            case .success(let trigger):
                book.record(trigger)
                responder.respond(HTTPResponse(status: 200, headers: ["Content-Type": "image/gif", "Cache-Control": "no-store"],
                                               body: Self.transparentGIF))
            case .failure(let error):
                responder.respond(Problem(status: 503, rule: error.isDiskFull ? "disk_full" : "store_unavailable",
                                          detail: "the trigger could not be recorded: \(error)").response)
            }
        }
    }

    /// The smallest transparent 1×1 GIF (43 bytes).
    static let transparentGIF: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xFF, 0xFF, 0xFF, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ]

    // MARK: - Helpers

    /// The host the browser asked for: `Host`, or `X-Forwarded-Host` from a trusted proxy.
    private func sentTo(_ request: HTTPRequest) -> String? {
        RequestedHost.of(request, trustedProxies: trustedProxies)
    }

    /// The registrable domain of a Host value (`www.shop.example:443` → `shop.example`).
    private func site(ofHost host: String) -> String? {
        let name = RoleResolver.normalizeHost(host)
        switch book.siteRules.check(name) {
        case nil: return name
        case .subdomain(let registrable)?: return registrable
        default: return nil
        }
    }

    private func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                     body: Array((text + "\n").utf8))
    }


    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }
}
