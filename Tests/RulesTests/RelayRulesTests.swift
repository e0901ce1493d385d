import Primitives
import Relays
import Testing

/// The relay's rules on their own: which addresses a destination may reach, which URLs are
/// destinations, what a destination's answer means, and every rule a registration follows,
/// hostile ones first.
@Suite struct RelayRulesTests {
    // MARK: - Addresses

    @Test(arguments: [
        ("8.8.8.8", IPAddress.Kind.public), ("1.1.1.1", .public), ("172.15.255.255", .public), ("172.32.0.1", .public),
        ("100.63.255.255", .public), ("100.128.0.0", .public), ("192.167.1.1", .public), ("2606:4700:4700::1111", .public),
        ("127.0.0.1", .loopback), ("127.255.255.254", .loopback), ("::1", .loopback), ("::ffff:127.0.0.1", .loopback),
        ("10.0.0.1", .private), ("172.16.0.1", .private), ("172.31.255.255", .private), ("192.168.1.1", .private),
        ("100.64.0.1", .private), ("fc00::1", .private), ("fd12:3456::1", .private), ("fec0::1", .private),
        ("169.254.0.1", .linkLocal), ("fe80::1", .linkLocal), ("febf::1", .linkLocal),
        ("169.254.169.254", .cloudMetadata), ("100.100.100.200", .cloudMetadata), ("fd00:ec2::254", .cloudMetadata),
        ("::ffff:169.254.169.254", .cloudMetadata), ("169.254.170.2", .cloudMetadata), ("169.254.170.23", .cloudMetadata),
        ("fd00:ec2::23", .cloudMetadata), ("fd20:ce::254", .cloudMetadata), ("168.63.129.16", .cloudMetadata),
        ("::ffff:168.63.129.16", .cloudMetadata), ("fd20:ce::253", .private), ("168.63.129.17", .public),
        ("64:ff9b:1::a00:1", .private), ("64:ff9b:1:ffff::808:808", .private),
        ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified), ("::", .unspecified),
        ("224.0.0.1", .multicast), ("239.255.255.255", .multicast), ("ff02::1", .multicast),
        ("192.0.2.1", .reserved), ("198.51.100.1", .reserved), ("203.0.113.1", .reserved), ("198.18.0.1", .reserved),
        ("240.0.0.1", .reserved), ("255.255.255.255", .reserved), ("2001:db8::1", .reserved), ("::10.0.0.1", .reserved),
        ("100::1", .reserved),
        // Forms that carry an IPv4 address are judged by it: NAT64 and 6to4 reaching inside.
        ("64:ff9b::10.0.0.1", .private), ("64:ff9b::8.8.8.8", .public), ("2002:7f00:1::", .loopback), ("2002:a9fe:a9fe::", .cloudMetadata),
    ])
    func everyAddressIsInTheRightNetwork(text: String, kind: IPAddress.Kind) throws {
        let address = try #require(IPAddress(text), "\(text) parses")
        #expect(address.kind == kind, "\(text)")
        #expect(address.isInternal == (kind != .public), "\(text)")
    }

    @Test(arguments: ["127.1", "0x7f.0.0.1", "2130706433", "017700000001", "1.2.3", "1.2.3.4.5", "256.0.0.1", "::g", "1::2::3", "", " 1.2.3.4", "[::1]"])
    func whatIsNotAnAddressIsNone(text: String) {
        #expect(IPAddress(text) == nil, "\(text)")
    }

    @Test func anAddressReadsBackAsItIsWritten() throws {
        #expect(try #require(IPAddress("10.0.0.1")).description == "10.0.0.1")
        #expect(try #require(IPAddress("FE80:0:0::1")).description == "fe80::1")
        #expect(IPAddress(bytes: [8, 8, 4, 4]) == IPAddress("8.8.4.4") && IPAddress("8.8.4.4") != nil)
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }

    // MARK: - URLs

    @Test func aPartnersURLIsTakenAndWrittenBackPlainly() throws {
        let url = try RelayURL.parse("HTTPS://Copies.Partner.Example:443/skan/v1?app=1")
        #expect(url.scheme == "https" && url.host == "copies.partner.example" && url.port == 443)
        #expect(url.description == "https://copies.partner.example/skan/v1?app=1")
        #expect(try RelayURL.parse("https://copies.partner.example").description == "https://copies.partner.example/")
        #expect(try RelayURL.parse("https://copies.partner.example:8443?x=1").description == "https://copies.partner.example:8443/?x=1")
        #expect(try RelayURL.parse("https://[2606:4700::1]:8443/p").description == "https://[2606:4700::1]:8443/p")
    }

    @Test(arguments: [
        ("https://user:pass@copies.partner.example/", "userinfo_not_allowed"),
        ("https://copies.partner.example@evil.example/", "userinfo_not_allowed"),
        ("ftp://copies.partner.example/", "unsupported_scheme"), ("javascript://x.example/", "unsupported_scheme"),
        ("file:///etc/passwd", "unsupported_scheme"), ("gopher://copies.partner.example/", "unsupported_scheme"),
        ("copies.partner.example/skan", "invalid_url"), ("https:copies.partner.example", "invalid_url"), ("", "invalid_url"),
        ("https://copies.partner.example/a b", "invalid_url"), ("https://copies.partner.example/é", "invalid_url"),
        ("https://copies.partner.example/#frag", "fragment_not_allowed"),
        ("https:///path", "invalid_host"), ("https://:443/", "invalid_host"), ("https://bad_host.example/", "invalid_host"),
        ("https://intranet/", "invalid_host"), ("https://127.1/", "invalid_host"), ("https://0x7f.0.0.1/", "invalid_host"),
        ("https://2130706433/", "invalid_host"), ("https://a..example/", "invalid_host"),
        ("https://0x7f.0.0.0x1/", "invalid_host"), ("https://127.0.0.0x1/", "invalid_host"), ("https://0x7f000001/", "invalid_host"),
        ("https://app.localhost/", "internal_address"), ("https://LOCALHOST./", "internal_address"),
        ("https://copies.partner.example:0/", "invalid_host"), ("https://copies.partner.example:65536/", "invalid_host"),
        ("https://copies.partner.example:abc/", "invalid_host"),
        ("https://10.0.0.5/", "internal_address"), ("https://169.254.169.254/latest/meta-data/", "internal_address"),
        ("https://[::1]/", "internal_address"), ("https://localhost/", "internal_address"), ("https://[fd00:ec2::254]/", "internal_address"),
        ("http://copies.partner.example/", "https_required"),
    ])
    func aBadURLIsRefusedNamingTheRule(text: String, rule: String) {
        #expect(throws: RequestProblem.self, "\(text)") { try RelayURL.parse(text) }
        do {
            _ = try RelayURL.parse(text)
        } catch {
            #expect(error.rule == rule, "\(text): \(error.rule), \(error.detail)")
            #expect(error.field == "url")
        }
    }

    @Test func aLongURLIsRefusedAtItsLimit() throws {
        let base = "https://copies.partner.example/"
        let atLimit = base + String(repeating: "a", count: RelayURL.maxLength - base.utf8.count)
        #expect(try RelayURL.parse(atLimit).description == atLimit)
        #expect(throws: RequestProblem.self) { try RelayURL.parse(atLimit + "a") }
    }

    @Test func plainHTTPIsForLoopbackOrWhenTheOperatorAllowsIt() throws {
        #expect(try RelayURL.parse("http://127.0.0.1:8080/copies", allowInternal: true).isLoopback)
        #expect(try RelayURL.parse("http://localhost:8080/copies", allowInternal: true).isLoopback)
        #expect(try RelayURL.parse("http://copies.partner.example/", allowHTTP: true).scheme == "http")
        // Internal but not loopback: still needs both permissions.
        #expect(throws: RequestProblem.self) { try RelayURL.parse("http://10.0.0.5/", allowInternal: true) }
        #expect(try RelayURL.parse("http://10.0.0.5/", allowHTTP: true, allowInternal: true).host == "10.0.0.5")
    }

    // MARK: - Answers

    @Test func whatEachAnswerMeans() {
        let now = Timestamp(rfc3339: "2026-11-28T10:00:00Z")!
        #expect(RelayOutcome.of(status: 200, retryAfter: nil, now: now) == .delivered)
        #expect(RelayOutcome.of(status: 204, retryAfter: nil, now: now) == .delivered)
        #expect(RelayOutcome.of(status: 400, retryAfter: nil, now: now) == .refused(status: 400))
        #expect(RelayOutcome.of(status: 404, retryAfter: "5", now: now) == .refused(status: 404))
        #expect(RelayOutcome.of(status: 301, retryAfter: nil, now: now) == .refused(status: 301))
        #expect(RelayOutcome.of(status: 308, retryAfter: nil, now: now) == .refused(status: 308))
        #expect(RelayOutcome.of(status: 408, retryAfter: "5", now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 429, retryAfter: "7", now: now) == .retry(after: 7))
        #expect(RelayOutcome.of(status: 429, retryAfter: nil, now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 503, retryAfter: "Sat, 28 Nov 2026 10:00:30 GMT", now: now) == .retry(after: 30))
        #expect(RelayOutcome.of(status: 500, retryAfter: "7", now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 599, retryAfter: nil, now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 100, retryAfter: nil, now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 0, retryAfter: nil, now: now) == .retry(after: nil))
        #expect(RelayOutcome.of(status: 999, retryAfter: nil, now: now) == .retry(after: nil))
    }

    @Test func retryAfterIsHonouredWithinItsBounds() {
        let now = Timestamp(rfc3339: "2026-11-28T10:00:00Z")!
        #expect(RelayOutcome.wait(retryAfter: "0", now: now) == 0)
        #expect(RelayOutcome.wait(retryAfter: " 120 ", now: now) == 120)
        #expect(RelayOutcome.wait(retryAfter: "86400", now: now) == RelayOutcome.longestWait)
        #expect(RelayOutcome.wait(retryAfter: String(repeating: "9", count: 400), now: now) == RelayOutcome.longestWait)
        #expect(RelayOutcome.wait(retryAfter: "Fri, 27 Nov 2026 10:00:00 GMT", now: now) == 0)
        #expect(RelayOutcome.wait(retryAfter: "Sun, 29 Nov 2026 10:00:00 GMT", now: now) == RelayOutcome.longestWait)
        for nonsense in ["-5", "1.5", "soon", "", "Sat, 28 Nov 2026 10:00:30 UTC", "Saturday, 28-Nov-26 10:00:30 GMT",
                         "Sat Nov 28 10:00:30 2026", "Sat, 28 Nov 2026 25:00:30 GMT", "Sat, 32 Nov 2026 10:00:30 GMT",
                         "Sat, 28 Foo 2026 10:00:30 GMT"] {
            #expect(RelayOutcome.wait(retryAfter: nonsense, now: now) == nil, "\(nonsense)")
        }
    }

    // MARK: - Registrations

    static let context = RelayRegistry.Context(servedSites: ["app.example", "shop.example"], apps: [525463029])

    static func partner(_ name: String = "partner-skan", url: String = "https://copies.partner.example/skan",
                        appID: Int? = 525463029, site: String? = nil, protocols: [RelayProtocol] = [.skadnetwork, .adattributionkit]) -> RelayDestination {
        RelayDestination(name: name, url: url, appID: appID, site: site, protocols: protocols)
    }

    func refusal(_ destination: RelayDestination, in registry: RelayRegistry = RelayRegistry()) -> RequestProblem? {
        var registry = registry
        do {
            try registry.add(destination, in: Self.context)
            return nil
        } catch {
            return error
        }
    }

    @Test func aPartnersDestinationIsRegisteredWithItsURLWrittenPlainly() throws {
        var registry = RelayRegistry()
        try registry.add(Self.partner(url: "https://Copies.Partner.Example/skan", protocols: [.adattributionkit, .skadnetwork]), in: Self.context)
        let stored = try #require(registry.destination(named: "partner-skan"))
        #expect(stored.url == "https://copies.partner.example/skan")
        #expect(stored.protocols == [.adattributionkit, .skadnetwork])
        #expect(stored.copies == .accepted && !stored.development && !stored.internal)
    }

    @Test func whoseCopiesADestinationTakes() {
        let app = Self.partner()
        #expect(app.takes(.skadnetwork, site: "app.example", appID: 525463029, accepted: true, development: false))
        #expect(app.takes(.skadnetwork, site: "shop.example", appID: 525463029, accepted: true, development: false), "an app's, wherever sent")
        #expect(!app.takes(.skadnetwork, site: "app.example", appID: 1, accepted: true, development: false), "another app's")
        #expect(!app.takes(.skadnetwork, site: "app.example", appID: nil, accepted: true, development: false), "an unregistered app's")
        #expect(!app.takes(.skadnetwork, site: "app.example", appID: 525463029, accepted: false, development: false), "quarantined")
        #expect(!app.takes(.skadnetwork, site: "app.example", appID: 525463029, accepted: true, development: true), "development")
        #expect(!app.takes(.pcm, site: "app.example", appID: nil, accepted: true, development: false))
        var all = Self.partner(site: nil)
        all.copies = .all
        all.development = true
        #expect(all.takes(.adattributionkit, site: "app.example", appID: 525463029, accepted: false, development: true))
        let site = Self.partner(appID: nil, site: "shop.example", protocols: [.pcm, .skadnetwork])
        #expect(site.takes(.pcm, site: "shop.example", appID: nil, accepted: true, development: false))
        #expect(site.takes(.skadnetwork, site: "shop.example", appID: 42, accepted: true, development: false), "every app's, there")
        #expect(!site.takes(.pcm, site: "app.example", appID: nil, accepted: true, development: false))
        #expect(!site.takes(.adattributionkit, site: "shop.example", appID: 42, accepted: true, development: false))
    }

    @Test func everyRegistrationRuleNamesItsField() {
        let cases: [(RelayDestination, field: String?, rule: String)] = [
            (Self.partner("Partner"), "name", "invalid_name"), (Self.partner("-x"), "name", "invalid_name"),
            (Self.partner(String(repeating: "a", count: 41)), "name", "invalid_name"), (Self.partner(""), "name", "invalid_name"),
            (Self.partner("../../etc"), "name", "invalid_name"),
            (Self.partner(appID: nil), "app_id", "missing_field"),
            (Self.partner(site: "app.example"), "site", "conflicting_fields"),
            (Self.partner(appID: 1), "app_id", "unknown_app"),
            (Self.partner(appID: nil, site: "other.example"), "site", "site_not_served"),
            (Self.partner(protocols: []), "protocols", "missing_field"),
            (Self.partner(protocols: [.skadnetwork, .skadnetwork]), "protocols", "duplicate_protocol"),
            (Self.partner(protocols: [.pcm]), "protocols", "pcm_needs_site"),
            (Self.partner(url: "https://user@copies.partner.example/"), "url", "userinfo_not_allowed"),
        ]
        for (destination, field, rule) in cases {
            let problem = refusal(destination)
            #expect(problem?.rule == rule, "\(destination.name) \(destination.url): \(String(describing: problem))")
            #expect(problem?.field == field, "\(rule)")
        }
        var weak = Self.partner()
        weak.secret = "short"
        #expect(refusal(weak)?.rule == "weak_secret")
        weak.secret = String(repeating: "s", count: 31) + " "
        #expect(refusal(weak)?.rule == "weak_secret")
        weak.secret = String(repeating: "s", count: 257)
        #expect(refusal(weak)?.rule == "weak_secret")
        weak.secret = String(repeating: "s", count: 32)
        #expect(refusal(weak) == nil)
    }

    @Test func anInternalDestinationIsTakenOnlyWhenSaidSoAndAMetadataServiceNever() {
        var collector = Self.partner(url: "http://127.0.0.1:9000/copies")
        #expect(refusal(collector)?.rule == "internal_address")
        collector.internal = true
        #expect(refusal(collector) == nil)
        var metadata = Self.partner(url: "https://169.254.169.254/latest/meta-data/")
        metadata.internal = true
        #expect(refusal(metadata)?.rule == "internal_address")
    }

    @Test func theSameDestinationTwiceIsAConflict() throws {
        var registry = RelayRegistry()
        try registry.add(Self.partner(), in: Self.context)
        let sameName = refusal(Self.partner(url: "https://other.partner.example/"), in: registry)
        #expect(sameName?.rule == "duplicate_destination" && sameName?.field == "name" && sameName?.kind == .conflict)
        // The same URL, written another way, for the same app.
        let sameURL = refusal(Self.partner("again", url: "HTTPS://COPIES.partner.example:443/skan"), in: registry)
        #expect(sameURL?.rule == "duplicate_destination" && sameURL?.field == "url")
        // The same URL for a site is another destination: it takes other copies.
        #expect(refusal(Self.partner("site", appID: nil, site: "app.example"), in: registry) == nil)
    }

    @Test func aThousandDestinationsStopAtTheLimit() throws {
        var registry = RelayRegistry()
        var refused = 0
        for n in 0..<1000 {
            do {
                try registry.add(Self.partner("p\(n)", url: "https://copies\(n).partner.example/"), in: Self.context)
            } catch {
                #expect(error.rule == "too_many_destinations" && error.kind == .conflict)
                refused += 1
            }
        }
        #expect(registry.destinations.count == RelayRegistry.maxDestinations)
        #expect(refused == 1000 - RelayRegistry.maxDestinations)
        #expect(registry.remove(name: "p0") && !registry.remove(name: "p0"))
        try registry.add(Self.partner("p-new", url: "https://new.partner.example/"), in: Self.context)
    }

    // MARK: - Input

    @Test func theInputIsReadFieldByField() throws {
        let json = try JSONParser().parse(Array(#"{"name":"partner-skan","url":"https://copies.partner.example/skan","app_id":525463029,"protocols":["skadnetwork"],"copies":"all","development":true,"internal":false,"secret":"0123456789abcdef0123456789abcdef"}"#.utf8))
        let destination = try RelayDestinationInput.destination(from: json)
        #expect(destination == RelayDestination(name: "partner-skan", url: "https://copies.partner.example/skan", appID: 525463029,
                                                protocols: [.skadnetwork], copies: .all, development: true,
                                                secret: "0123456789abcdef0123456789abcdef"))
        #expect(destination.shown.hasSecret)
    }

    @Test(arguments: [
        (#"[]"#, "not_an_object"), (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"extra":1}"#, "unknown_field"),
        (#"{"url":"https://x.example/","protocols":["skadnetwork"]}"#, "missing_field"),
        (#"{"name":"a","protocols":["skadnetwork"]}"#, "missing_field"),
        (#"{"name":"a","url":"https://x.example/"}"#, "missing_field"),
        (#"{"name":1,"url":"https://x.example/","protocols":["skadnetwork"]}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":"skadnetwork"}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skan"]}"#, "unknown_protocol"),
        (#"{"name":"a","url":"https://x.example/","protocols":[1]}"#, "unknown_protocol"),
        (#"{"name":"a","url":"https://x.example/","protocols":["pcm","pcm","pcm","pcm","pcm","pcm","pcm"]}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"app_id":-1}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"app_id":1.5}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"app_id":99999999999999999999}"#, "wrong_type"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"copies":"some"}"#, "invalid_value"),
        (#"{"name":"a","url":"https://x.example/","protocols":["skadnetwork"],"internal":"yes"}"#, "wrong_type"),
    ])
    func aBadInputIsRefusedNamingTheRule(body: String, rule: String) throws {
        let json = try JSONParser().parse(Array(body.utf8))
        do {
            _ = try RelayDestinationInput.destination(from: json)
            Issue.record("\(body) was taken")
        } catch {
            #expect(error.rule == rule, "\(body): \(error.rule) \(error.detail)")
        }
    }

    @Test func aNameIsResolvedAtRegistrationAndOneThatResolvesInsideOrNowhereIsRefused() {
        let dns: [String: [IPAddress]] = ["copies.partner.example": [IPAddress("93.184.215.14")!],
                                          "rebound.partner.example": [IPAddress("93.184.215.14")!, IPAddress("10.0.0.7")!],
                                          "metadata.partner.example": [IPAddress("169.254.169.254")!]]
        var context = Self.context
        context.resolve = { dns[$0] }
        func rule(_ url: String, internal: Bool = false) -> String? {
            var registry = RelayRegistry()
            var destination = Self.partner(url: url)
            destination.internal = `internal`
            do { try registry.add(destination, in: context); return nil } catch { return error.rule }
        }
        #expect(rule("https://copies.partner.example/") == nil)
        #expect(rule("https://nowhere.partner.example/") == "host_does_not_resolve")
        #expect(rule("https://rebound.partner.example/") == "internal_address", "one address inside is enough")
        #expect(rule("https://rebound.partner.example/", internal: true) == nil)
        #expect(rule("https://metadata.partner.example/", internal: true) == "internal_address")
        // A literal is checked by what it is, never looked up.
        #expect(rule("https://8.8.8.8/") == nil)
    }
}
